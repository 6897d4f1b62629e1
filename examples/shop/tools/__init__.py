"""The shop's tools: each an `agentkeel.tool` function with its models and its answer.

The upper-case names are the same tools, as the stand-ins and tests name them.
"""

from agentkeel.examples.shop.carrier_api import Tracking, TrackingEvent
from agentkeel.examples.shop.tools.customers import (
    Customer,
    FindCustomerArgs,
    FindCustomerInput,
    ListOrdersArgs,
    ListOrdersInput,
    OrderList,
    OrderSummary,
    find_customer,
    list_orders,
)
from agentkeel.examples.shop.tools.inventory import (
    CheckInventoryArgs,
    CheckInventoryInput,
    Inventory,
    WarehouseStock,
    check_inventory,
)
from agentkeel.examples.shop.tools.knowledge import (
    KbHit,
    KbResult,
    SearchKbArgs,
    SearchKbInput,
    search_kb,
)
from agentkeel.examples.shop.tools.orders import (
    GetOrderArgs,
    GetOrderInput,
    Order,
    OrderItem,
    get_order,
)
from agentkeel.examples.shop.tools.refunds import (
    REFUND_REJECTED,
    CreateRefundArgs,
    CreateRefundInput,
    Refund,
    create_refund,
)
from agentkeel.examples.shop.tools.shipping import (
    TrackShipmentArgs,
    TrackShipmentInput,
    track_shipment,
)

TOOLS = (
    find_customer,
    list_orders,
    get_order,
    check_inventory,
    track_shipment,
    search_kb,
    create_refund,
)

FIND_CUSTOMER = find_customer
LIST_ORDERS = list_orders
GET_ORDER = get_order
CHECK_INVENTORY = check_inventory
TRACK_SHIPMENT = track_shipment
SEARCH_KB = search_kb
CREATE_REFUND = create_refund

__all__ = [
    "CHECK_INVENTORY",
    "CREATE_REFUND",
    "FIND_CUSTOMER",
    "GET_ORDER",
    "LIST_ORDERS",
    "REFUND_REJECTED",
    "SEARCH_KB",
    "TOOLS",
    "TRACK_SHIPMENT",
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
    "SearchKbArgs",
    "SearchKbInput",
    "TrackShipmentArgs",
    "TrackShipmentInput",
    "Tracking",
    "TrackingEvent",
    "WarehouseStock",
    "check_inventory",
    "create_refund",
    "find_customer",
    "get_order",
    "list_orders",
    "search_kb",
    "track_shipment",
]
