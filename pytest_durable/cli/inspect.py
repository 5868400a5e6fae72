"""``durable inspect URL``: print what a store holds, never writing to it (spec INS-1..INS-8).

    durable inspect URL [--key KEY] [--json] [--namespace NS] [--timeout SECONDS]

The store is read by :func:`reference_runtime.inspection.inspect_store`; this module renders what it returns,
as a table or as JSON.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from reference_runtime.errors import DurableError
from reference_runtime.inspection import PREVIEW, StateView, inspect_store

from .args import CommandError, Parser


def _compact(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"


def render_inspection(url: str, views: list[StateView]) -> str:
    """The human table ``durable inspect`` prints."""
    lines = [f"{url}: {len(views)} action state{'s' if len(views) != 1 else ''}"]
    engines = [v.engine for v in views if v.engine is not None]
    if engines:  # a Flink Agents topic: which engine version owns it, and whether it reads everything (INS-8)
        lines.append(f"{engines[0]['topic']}" + ("" if all(e["readable"] for e in engines) else "  (UNREADABLE)"))
    for v in views:
        status = "ERROR" if v.error else ("completed" if v.completed else "in progress")
        lines.append(f"key {v.key!r}  seq {v.seq}  action {v.action or '?'}  {status}  [{v.format or '?'}]")
        lines.append(f"    state key  {v.state_key}")
        if v.engine is not None and not v.engine["readable"]:
            owner = f"the {v.engine['owner']} engine owning the topic" if v.engine["owner"] else "no owning engine"
            lines.append(f"    NOT READABLE by {owner}: {v.engine['reason']}")
        if v.error:
            lines.append(f"    unreadable: {v.error}")
            continue
        if v.task_event is not None:
            lines.append(f"    event      {v.task_event['type']} {_compact(v.task_event['attributes'])}")
        for c in v.calls:
            legacy = " (no status written)" if c.status_written == "legacy" else ""
            outcome = (
                f"undecodable: {c.decode_error}"
                if c.decode_error
                else f"raised {c.exception}"
                if c.exception is not None
                else f"-> {c.result}"
                if c.result is not None
                else ""
            )
            lines.append(
                f"    call {c.index:<5} {c.function_id}  {c.args_digest}  {c.status}{legacy}  {outcome}".rstrip()
            )
        for name, updates in (("memory", v.short_term_memory), ("sensory", v.sensory_memory)):
            for u in updates:
                what = "new object" if u.get("new_object") else _compact(u["value"])
                lines.append(f"    {name:<10} {u['path']} = {what}")
        for e in v.output_events:
            lines.append(f"    output     {e['type']} {_compact(e['attributes'])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="durable inspect", description="print what a store holds (read-only)")
    parser.add_argument(
        "url",
        metavar="URL",
        help="sqlite:PATH, redis://HOST:PORT/DB, kafka://HOST:PORT/TOPIC[?format=flink-agents], or a registered scheme",
    )
    parser.add_argument("--key", metavar="KEY", help="only the states of this business key")
    parser.add_argument("--json", action="store_true", help="print JSON (a list of states) instead of a table")
    parser.add_argument("--namespace", default="durable", metavar="NS", help="Redis key namespace (default durable)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="give up on an unreachable server after this long (default 10)",
    )
    args = parser.parse_args(argv)
    try:
        views = inspect_store(args.url, key=args.key, namespace=args.namespace, timeout=args.timeout)
    except DurableError as exc:
        raise CommandError(f"durable inspect: {exc}") from None
    if args.json:
        print(json.dumps([asdict(v) for v in views], ensure_ascii=False, indent=1, default=repr))
    else:
        print(render_inspection(args.url, views))
    unreadable = any(v.engine is not None and not v.engine["readable"] for v in views)  # INS-8
    return 1 if unreadable or any(v.error or any(c.decode_error for c in v.calls) for v in views) else 0
