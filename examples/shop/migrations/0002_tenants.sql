-- Every row of a customer's belongs to one tenant: the tools read and write a run's own
-- tenant's rows only (`ToolContext.tenant`), so one tenant's staff never reach another's
-- orders. Rows from before tenants, and the demo's seed, are the `default` tenant's. The
-- catalog (products, stock, warehouses) and the help center stay shared and public.

ALTER TABLE customers ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE orders ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE order_items ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE shipments ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE refunds ADD COLUMN tenant text NOT NULL DEFAULT 'default';

-- An email names one customer within a tenant; two tenants may each have that customer.
ALTER TABLE customers DROP CONSTRAINT customers_email_key;
CREATE UNIQUE INDEX customers_tenant_email_idx ON customers (tenant, email);

CREATE INDEX orders_tenant_idx ON orders (tenant, order_id);
CREATE INDEX orders_tenant_customer_placed_idx ON orders (tenant, customer_id, placed_at DESC);
CREATE INDEX shipments_tenant_tracking_idx ON shipments (tenant, tracking_number);
CREATE INDEX refunds_tenant_order_idx ON refunds (tenant, order_id);
