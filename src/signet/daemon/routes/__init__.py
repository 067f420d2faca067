"""HTTP routers, one module per area."""
