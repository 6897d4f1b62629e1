"""The gateway's HTTP routes, one router per concern (runs, approvals, audit), included by
`gateway.app.create_app` in the order the OpenAPI document lists them."""
