"""Reading examples: file streams (JSON lines, CSV, svmlight), the shared schema, bundled data.

May import `river_cw` and the standard library; nothing else of `streams`.
"""
