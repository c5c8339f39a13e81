"""The HTTP face of served conversations (Starlette): the routes, who calls, bodies, idempotency
records, the streams and their encoders, the pages, the request log. Nothing below it imports
it; ``app.py`` gathers the routes (docs/architecture.md, "Serving in rooms")."""
