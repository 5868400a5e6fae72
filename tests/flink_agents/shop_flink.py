"""A shop agent written only against the flink_agents 0.3.1 API: a user event class, a durable call with
a reconciler (switched by action config), short-term memory, a config option and a tool call (a tool
resource called durably). Its twin against reference_runtime is shop_reference.py."""

from __future__ import annotations

from typing import Any, ClassVar

from flink_agents.api.agents.agent import Agent
from flink_agents.api.configuration import ConfigOption
from flink_agents.api.decorators import action, tool
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.resource import ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools.tool import Tool

from . import shop_services as services

DISCOUNT = ConfigOption(key="shop.discount", config_type=int, default=0)


class Quoted(Event):
    EVENT_TYPE: ClassVar[str] = "shop_quoted"

    def __init__(self, order: str, amount: int) -> None:
        super().__init__(type=Quoted.EVENT_TYPE, attributes={"order": order, "amount": amount})

    @classmethod
    def from_event(cls, event: Event) -> Quoted:
        quoted = cls(order=event.attributes["order"], amount=event.attributes["amount"])
        quoted.id = event.id
        return quoted

    @property
    def order(self) -> str:
        return str(self.attributes["order"])

    @property
    def amount(self) -> int:
        return int(self.attributes["amount"])


def quote(event: Event, ctx: RunnerContext) -> None:
    request: dict[str, Any] = InputEvent.from_event(event).input
    price = ctx.durable_execute(services.price_of, request["items"])
    orders = ctx.short_term_memory.get("orders") or 0
    ctx.short_term_memory.set("orders", orders + 1)
    ctx.send_event(Quoted(order=request["order"], amount=price - ctx.config.get(DISCOUNT)))


def pay(event: Event, ctx: RunnerContext) -> None:
    quoted = Quoted.from_event(event)
    reconciler = (
        services.reconciler_for(quoted.order, quoted.amount) if ctx.get_action_config_value("reconcile") else None
    )
    receipt = ctx.durable_execute(services.charge, quoted.order, quoted.amount, reconciler=reconciler)
    ctx.short_term_memory.set(f"receipts.{quoted.order}", receipt)
    ctx.send_event(Event(type="shop_paid", attributes={"order": quoted.order, "receipt": receipt}))


def done(event: Event, ctx: RunnerContext) -> None:
    notify = ctx.get_resource("notify", ResourceType.TOOL)
    mailed = ctx.durable_execute(notify.call, order=event.get_attr("order"), text=event.get_attr("receipt"))
    ctx.send_event(OutputEvent(output=f"{event.get_attr('receipt')}, {mailed}"))


class ShopAgent(Agent):
    """Charges with a reconciler: every crash recovers without a second charge."""

    def __init__(self) -> None:
        super().__init__()
        self.add_action("pay", [Quoted.EVENT_TYPE], pay, reconcile=True)

    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def quote(event: Event, ctx: RunnerContext) -> None:
        quote(event, ctx)

    @action("shop_paid")
    @staticmethod
    def done(event: Event, ctx: RunnerContext) -> None:
        done(event, ctx)

    @tool
    @staticmethod
    def notify(order: str, text: str) -> str:
        """Mail the customer."""
        return services.notify(order, text)


class UnsafeShopAgent(Agent):
    """Charges without a reconciler: a crash right after the charge charges again."""

    def __init__(self) -> None:
        super().__init__()
        self.add_action("pay", [Quoted.EVENT_TYPE], pay, reconcile=False)
        self.add_resource("notify", ResourceType.TOOL, Tool.from_callable(services.notify))

    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def quote(event: Event, ctx: RunnerContext) -> None:
        quote(event, ctx)

    @action("shop_paid")
    @staticmethod
    def done(event: Event, ctx: RunnerContext) -> None:
        done(event, ctx)
