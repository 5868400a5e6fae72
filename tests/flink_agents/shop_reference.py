"""The reference_runtime twin of shop_flink.py: the same actions, calls and memory."""

from __future__ import annotations

from typing import Any

from reference_runtime import Agent, Event, OutputEvent, RunnerContext, action

from . import shop_services as services


class Quoted(Event):
    TYPE = "shop_quoted"

    def __init__(self, order: str, amount: int) -> None:
        super().__init__(self.TYPE, {"order": order, "amount": amount})


def quote(event: Event, ctx: RunnerContext) -> None:
    request: dict[str, Any] = event.attributes["input"]
    price = ctx.durable_execute(services.price_of, request["items"])
    orders = ctx.short_term_memory.get("orders") or 0
    ctx.short_term_memory.set("orders", orders + 1)
    ctx.send_event(Quoted(request["order"], price - ctx.config.get("shop.discount", 0)))


def pay(event: Event, ctx: RunnerContext, reconcile: bool) -> None:
    order, amount = event.attributes["order"], event.attributes["amount"]
    reconciler = services.reconciler_for(order, amount) if reconcile else None
    receipt = ctx.durable_execute(services.charge, order, amount, reconciler=reconciler)
    ctx.short_term_memory.set(f"receipts.{order}", receipt)
    ctx.send_event(Event("shop_paid", {"order": order, "receipt": receipt}))


def done(event: Event, ctx: RunnerContext) -> None:
    mailed = ctx.durable_execute(services.notify, order=event.attributes["order"], text=event.attributes["receipt"])
    ctx.send_event(OutputEvent(f"{event.attributes['receipt']}, {mailed}"))


class ShopTwin(Agent):
    @action("_input_event")
    @staticmethod
    def quote(event: Event, ctx: RunnerContext) -> None:
        quote(event, ctx)

    @action(Quoted)
    @staticmethod
    def pay(event: Event, ctx: RunnerContext) -> None:
        pay(event, ctx, reconcile=True)

    @action("shop_paid")
    @staticmethod
    def done(event: Event, ctx: RunnerContext) -> None:
        done(event, ctx)


class UnsafeShopTwin(ShopTwin):
    """:class:`ShopTwin` paying without a reconciler (a reference agent inherits its base's actions)."""

    @action(Quoted)
    @staticmethod
    def pay(event: Event, ctx: RunnerContext) -> None:
        pay(event, ctx, reconcile=False)
