"""The tool catalog: argument and result models of every tool, declared once.

The workflow validates plans against these models (deterministically, inside
the workflow), the activities decode their inputs with them, and policies
describe them to models. Each area module holds its tools' models, their
rendering in words and their `ToolSpec`; `catalog` collects them into `TOOLS`.
"""

from schemas.tools.catalog import TOOLS, catalog_version
from schemas.tools.customers import (
    FIND_CUSTOMER,
    LIST_ORDERS,
    Customer,
    FindCustomerArgs,
    ListOrdersArgs,
    OrderList,
    OrderSummary,
)
from schemas.tools.inventory import CHECK_INVENTORY, CheckInventoryArgs, Inventory, WarehouseStock
from schemas.tools.knowledge import SEARCH_KB, KbHit, KbResult, SearchKbArgs
from schemas.tools.orders import GET_ORDER, GetOrderArgs, Order, OrderItem
from schemas.tools.refunds import CREATE_REFUND, CreateRefundArgs, CreateRefundInput, Refund
from schemas.tools.shipping import TRACK_SHIPMENT, Tracking, TrackingEvent, TrackShipmentArgs
from schemas.tools.spec import Render, ToolArgs, ToolSpec, money

__all__ = [
    "CHECK_INVENTORY",
    "CREATE_REFUND",
    "FIND_CUSTOMER",
    "GET_ORDER",
    "LIST_ORDERS",
    "SEARCH_KB",
    "TOOLS",
    "TRACK_SHIPMENT",
    "CheckInventoryArgs",
    "CreateRefundArgs",
    "CreateRefundInput",
    "Customer",
    "FindCustomerArgs",
    "GetOrderArgs",
    "Inventory",
    "KbHit",
    "KbResult",
    "ListOrdersArgs",
    "Order",
    "OrderItem",
    "OrderList",
    "OrderSummary",
    "Refund",
    "Render",
    "SearchKbArgs",
    "ToolArgs",
    "ToolSpec",
    "TrackShipmentArgs",
    "Tracking",
    "TrackingEvent",
    "WarehouseStock",
    "catalog_version",
    "money",
]
