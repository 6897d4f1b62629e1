"""The tool catalog: argument and result models of every tool, declared once.

The workflow validates plans against these models (deterministically, inside
the workflow), the activities decode their inputs with them, and policies
describe them to models. Each area module holds its tools' models, their
rendering in words and their `ToolSpec`; `catalog` collects them into `TOOLS`.
"""

from agentkeel.schemas.tools.catalog import (
    ACTIVITY_TOOLS,
    SIDE_EFFECT_TOOLS,
    TOOLS,
    catalog_version,
    has_side_effect,
)
from agentkeel.schemas.tools.customers import (
    FIND_CUSTOMER,
    LIST_ORDERS,
    Customer,
    FindCustomerArgs,
    FindCustomerInput,
    ListOrdersArgs,
    ListOrdersInput,
    OrderList,
    OrderSummary,
)
from agentkeel.schemas.tools.inventory import (
    CHECK_INVENTORY,
    CheckInventoryArgs,
    CheckInventoryInput,
    Inventory,
    WarehouseStock,
)
from agentkeel.schemas.tools.knowledge import (
    SEARCH_KB,
    KbHit,
    KbResult,
    SearchKbArgs,
    SearchKbInput,
)
from agentkeel.schemas.tools.orders import GET_ORDER, GetOrderArgs, GetOrderInput, Order, OrderItem
from agentkeel.schemas.tools.refunds import (
    CREATE_REFUND,
    CreateRefundArgs,
    CreateRefundInput,
    Refund,
)
from agentkeel.schemas.tools.shipping import (
    TRACK_SHIPMENT,
    Tracking,
    TrackingEvent,
    TrackShipmentArgs,
    TrackShipmentInput,
)
from agentkeel.schemas.tools.spec import ActorScoped, Render, ToolArgs, ToolSpec, money
from agentkeel.schemas.tools.timers import WAIT, WaitArgs, Waited

__all__ = [
    "ACTIVITY_TOOLS",
    "CHECK_INVENTORY",
    "CREATE_REFUND",
    "FIND_CUSTOMER",
    "GET_ORDER",
    "LIST_ORDERS",
    "SEARCH_KB",
    "SIDE_EFFECT_TOOLS",
    "TOOLS",
    "TRACK_SHIPMENT",
    "WAIT",
    "ActorScoped",
    "CheckInventoryArgs",
    "CheckInventoryInput",
    "CreateRefundArgs",
    "CreateRefundInput",
    "Customer",
    "FindCustomerArgs",
    "FindCustomerInput",
    "GetOrderArgs",
    "GetOrderInput",
    "Inventory",
    "KbHit",
    "KbResult",
    "ListOrdersArgs",
    "ListOrdersInput",
    "Order",
    "OrderItem",
    "OrderList",
    "OrderSummary",
    "Refund",
    "Render",
    "SearchKbArgs",
    "SearchKbInput",
    "ToolArgs",
    "ToolSpec",
    "TrackShipmentArgs",
    "TrackShipmentInput",
    "Tracking",
    "TrackingEvent",
    "WaitArgs",
    "Waited",
    "WarehouseStock",
    "catalog_version",
    "has_side_effect",
    "money",
]
