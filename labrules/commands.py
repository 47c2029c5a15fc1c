"""Remote commands (pulumi-command over SSH): every dial is bounded.

The guides configure switches and helper hosts over SSH; pulumi-command's connection takes
`perDialTimeout` (seconds) and `dialErrorLimit` (attempts, -1 meaning retry forever). An unbounded
dial against an unreachable lab machine stalls the whole update instead of failing it.
"""

from __future__ import annotations

# Seconds one SSH dial may take: long enough for a switch's management CPU under load, short
# enough that a wrong address fails the update within minutes.
PER_DIAL_TIMEOUT_SECONDS = (1, 120)

# Dial attempts before the command fails; never -1 (retry forever).
DIAL_ERROR_LIMIT = (1, 10)
