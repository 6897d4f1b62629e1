"""SQL of the tool activities. Every statement takes its inputs as `$n` parameters.

A customer's rows (customers, orders and their items, shipments, refunds) belong to one
tenant: every statement that reads or writes them takes the call's tenant
(`ToolContext.tenant`) and matches it, so a row of another tenant is not there at all.
The catalog and the help center are shared by every tenant.
"""

from __future__ import annotations

FIND_CUSTOMER = """
SELECT customer_id, name, email, tier, city
FROM customers
WHERE email = $1 AND tenant = $2
"""

# A customer row even without orders (o.order_id NULL), none for an unknown customer.
LIST_ORDERS = """
SELECT c.customer_id, o.order_id, o.status, o.total_cents, o.placed_at
FROM customers c
LEFT JOIN LATERAL (
    SELECT order_id, status, total_cents, placed_at
    FROM orders
    WHERE customer_id = c.customer_id AND tenant = c.tenant
    ORDER BY placed_at DESC, order_id DESC
    LIMIT $2
) o ON true
WHERE c.customer_id = $1 AND c.tenant = $3
ORDER BY o.placed_at DESC, o.order_id DESC
"""

GET_ORDER = """
SELECT o.order_id, o.customer_id, o.status, o.total_cents, o.placed_at,
       (SELECT coalesce(sum(r.amount_cents), 0) FROM refunds r WHERE r.order_id = o.order_id)
           AS refunded_cents,
       (SELECT s.tracking_number FROM shipments s WHERE s.order_id = o.order_id)
           AS tracking_number
FROM orders o
WHERE o.order_id = $1 AND o.tenant = $2
"""

ORDER_ITEMS = """
SELECT i.sku, p.name AS product_name, i.quantity, i.unit_price_cents
FROM order_items i
JOIN products p USING (sku)
WHERE i.order_id = $1 AND i.tenant = $2
ORDER BY i.line_no
"""

# A product row even without inventory rows (warehouse NULL), none for an unknown SKU.
CHECK_INVENTORY = """
SELECT p.sku, p.name AS product_name, i.warehouse, i.available
FROM products p
LEFT JOIN inventory i USING (sku)
WHERE p.sku = $1
ORDER BY i.warehouse
"""

CHECK_INVENTORY_MANY = """
SELECT p.sku, p.name AS product_name, i.warehouse, i.available
FROM products p
LEFT JOIN inventory i USING (sku)
WHERE p.sku = ANY($1::text[])
ORDER BY p.sku, i.warehouse
"""

# Ranks every match but builds headlines (the costly part) for the top hits only.
_SEARCH_KB = """
WITH query AS (SELECT {tsquery} AS q),
top AS (
    SELECT a.article_id, ts_rank(a.tsv, query.q) AS rank
    FROM kb_articles a, query
    WHERE a.tsv @@ query.q
    ORDER BY rank DESC, a.article_id
    LIMIT $2
)
SELECT a.article_id, a.title, top.rank,
       ts_headline('english', a.body, query.q,
                   'StartSel="", StopSel="", MaxWords=35, MinWords=15') AS snippet
FROM top
JOIN kb_articles a USING (article_id)
CROSS JOIN query
ORDER BY top.rank DESC, a.article_id
"""

# Every word must match (websearch syntax: "quoted phrases", -exclusions, or).
SEARCH_KB_ALL_WORDS = _SEARCH_KB.format(tsquery="websearch_to_tsquery('english', $1)")

# Any word may match: for natural questions whose words no single article holds all of.
# plainto_tsquery's output is normalised, quoted lexemes joined by ' & ': safe to rewrite.
SEARCH_KB_ANY_WORD = _SEARCH_KB.format(
    tsquery="replace(plainto_tsquery('english', $1)::text, ' & ', ' | ')::tsquery"
)

SHIPMENT_OWNER = """
SELECT o.customer_id
FROM shipments s
JOIN orders o USING (order_id)
WHERE s.tracking_number = $1 AND s.tenant = $2 AND o.tenant = $2
"""

ORDER_OWNER = """
SELECT customer_id FROM orders WHERE order_id = $1 AND tenant = $2
"""

LOCK_ORDER = """
SELECT order_id, customer_id, status, total_cents
FROM orders
WHERE order_id = $1 AND tenant = $2
FOR UPDATE
"""

# A statement of its own, run after LOCK_ORDER: its snapshot is taken once the lock is held,
# so it sees refunds committed by a transaction the lock waited for.
REFUNDED_CENTS = """
SELECT coalesce(sum(amount_cents), 0) FROM refunds WHERE order_id = $1 AND tenant = $2
"""

REFUND_BY_KEY = """
SELECT refund_id, order_id, amount_cents, status
FROM refunds
WHERE idempotency_key = $1
"""

INSERT_REFUND = """
INSERT INTO refunds (order_id, amount_cents, reason, status, idempotency_key, tenant)
VALUES ($1, $2, $3, 'issued', $4, $5)
ON CONFLICT (idempotency_key) DO NOTHING
RETURNING refund_id, order_id, amount_cents, status
"""
