"""What evaluation and serving share: model specs, and the broker-free mixing protocol.

May import `river_cw`; nothing of `streams` but this package.
"""
