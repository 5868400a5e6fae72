"""The tutorial's refund agent, buggy and fixed (docs/plugin/tutorial.md)."""
