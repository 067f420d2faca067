"""Auth and multiple agents: modes, signed tokens, roles, scopes, rate limits, rosters.

``tokens`` signs and verifies bearer tokens; ``policy`` holds the one route -> permission
table and the role matrix; ``middleware`` enforces both (plus Host checks) in one ASGI layer
so no route can skip them; ``agents`` syncs the roster and turns a caller into a ReadScope.
"""
