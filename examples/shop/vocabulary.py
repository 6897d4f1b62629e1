"""The shop's words for the same things: what the canonical reading of a question folds.

Two questions whose content words name the same concepts, and whose literal facts agree
(`activities.cache.reading`), ask the same thing: "is shipping free" and "do you offer
free shipping" both read {free, ship}. Only what is listed here is folded; every other
content word must occur in both questions as it is, so a word this vocabulary does not
know ("Sydney", "kettles") can never be treated as a synonym of another.

Each concept lists phrases (matched whole, longest first, before single words) and
words (matched by their stem, so "refunds", "refunded" and "refunding" are "refund").
Folding is deliberately narrow: "shipped" and "delivered" are different states of an
order, so `ship` and `deliver` stay apart even where a shopper uses them loosely; a
missed paraphrase costs one fresh run, a wrong fold serves another question's answer.
"""

from __future__ import annotations

CONCEPTS: dict[str, tuple[str, ...]] = {
    # What the shopper wants done or known.
    "refund": ("refund", "money back", "reimburse", "reimbursement", "repay", "repayment"),
    "return": (
        "return", "send back", "send it back", "send something back", "send them back",
        "sending back", "bring back",
    ),
    "exchange": ("exchange", "swap"),
    "cancel": ("cancel", "cancellation", "call off"),
    "ship": ("ship", "shipping", "postage"),
    "deliver": ("deliver", "delivery", "arrive", "arrival", "get here", "receive", "received"),
    "track": ("track", "tracking", "trace"),
    "tracking_number": ("tracking number", "tracking code", "tracking id", "tracking no"),
    "status": ("status", "state", "progress", "processed", "went through", "gone through"),
    "where": ("where", "whereabouts", "location", "current location"),
    "when": ("when", "what date", "what day", "which date", "what time", "which day"),
    "when+deliver": ("delivery date", "arrival date", "eta", "delivery day"),
    "how_long": (
        "how long", "how many days", "how many weeks", "how quickly", "how soon", "period",
        "duration", "window", "timeframe", "time frame",
    ),
    "how_many": ("how many", "number of", "count", "count of", "quantity"),
    "price": ("price", "cost", "how much", "fee", "charge", "priced", "pricing", "total"),
    "pay": ("pay", "payment", "paid"),
    "stock": ("stock", "in stock", "available", "availability", "inventory"),
    "out_of_stock": ("out of stock", "sold out"),
    "restock": ("restock", "restocked", "back in stock", "replenish"),
    "warranty": ("warranty", "guarantee"),
    "change": ("change", "update", "modify", "edit", "correct"),
    "contact": ("contact", "reach", "get in touch", "talk to", "speak to", "call"),
    "support": ("support", "customer service", "customer support", "help desk", "customer care"),
    "package": ("package", "parcel", "shipment"),
        "damaged": ("damaged", "broken", "defective", "faulty", "cracked"),
    "lost": ("lost", "missing", "went missing"),
    "late": ("late", "delayed", "overdue"),
    "wrong": ("wrong", "incorrect", "not what i ordered"),
    "international": (
        "international", "internationally", "abroad", "overseas", "worldwide",
        "other countries", "another country", "outside the country",
    ),
    "expire": ("expire", "expiry", "expiration", "expiration date", "expiry date"),
    "delivery_address": ("delivery address", "shipping address", "address on my order"),
    "store_credit": ("store credit", "shop credit"),
    "gift_card": ("gift card", "gift voucher", "gift certificate"),
    "card": ("card", "credit card", "debit card"),
    "email_address": ("email address", "e-mail address", "email", "e-mail"),
    "password": ("password", "passcode"),
    "receipt": ("receipt", "proof of purchase"),
        "order": ("order", "purchase"),
    "last": ("last", "latest", "most recent", "newest"),
    "why": ("why", "how come", "reason"),
    "more_than": ("over", "above", "more than", "greater than", "exceeding", "at least"),
    "less_than": ("under", "below", "less than", "fewer than", "at most", "up to"),
    "other": ("other", "another", "different"),
}  # fmt: skip
"""Concept -> the phrases and words that name it in this shop's questions."""

FRAMING: tuple[str, ...] = (
    # How a question is put, not what it asks: "is it possible to", "what are the steps".
    "possible", "able", "allowed", "eligible", "way", "ways", "process", "procedure",
    "steps", "step", "policy", "policies", "rules", "work", "works", "happen", "happens",
    "please", "thanks", "thank", "kindly", "help", "tell", "show", "give", "let", "know",
    "want", "like", "need", "get", "see", "find", "check", "look", "still", "yet",
    "already", "usually", "right", "now", "currently", "just", "also", "really",
    "something", "anything", "thing", "things", "stuff", "one", "item", "items", "product",
    "products", "article", "goods", "unit", "units", "customer", "client", "shopper",
    "offer", "best", "issue", "list", "make", "file", "submit", "start", "begin", "open",
    "request", "accept", "method", "methods", "option", "options", "team", "department",
    "up", "back",
)  # fmt: skip
"""Content-free in this shop's questions: dropped before questions are compared."""

ACTIONS: frozenset[str] = frozenset({"refund", "cancel", "return", "exchange", "change"})
"""Concepts that name something the agent may do to an order: asking about one and ordering
one differ ("can I get a refund for order 1003?" against "refund order 1003")."""

COMPARISONS: frozenset[str] = frozenset({"more_than", "less_than"})
"""Concepts that compare a quantity: they count only beside an amount or a number ("orders
over $50" against "under $50"; "covered under the warranty" compares nothing)."""

GENERAL_FOLDS: dict[str, str] = {"deliver": "ship"}
"""Folded only in a question about no particular order, parcel, SKU or customer: there
"shipping" and "delivery" both name the service; about an order they are its states."""
PARTICULAR_FOLDS: dict[str, str] = {"where": "status", "track": "status"}
"""Folded only in a question about a particular order or parcel: where it is, its tracking
and its status are one answer."""
