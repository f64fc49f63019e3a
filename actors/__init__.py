"""Thin Ray actors over the pure model: they move messages and keep time, nothing more.

`harness` is imported first: it decides whether this package's compiled modules (the hosts' hot
path) or their sources load (`harness.PACKAGES`).
"""

import harness as harness
