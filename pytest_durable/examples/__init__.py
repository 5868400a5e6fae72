"""The example agents of the documentation, shipped with the package so every documented example runs from
an installed wheel: ``refund`` (the README's two-call refund agent), ``react_agent`` (a ReAct agent whose tools
write to SQLite, ``python -m pytest_durable.examples.react_agent``) and ``buggy_refund`` (the tutorial's agent
with its two bugs, the fixed agent and their tests: ``pytest --pyargs pytest_durable.examples.buggy_refund``).
Nothing in the plugin imports them."""
