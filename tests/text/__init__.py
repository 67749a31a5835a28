"""Text: `river_cw.text.BagOfWords` against river's (and its compiled counting, `_text.c`), and
`TextClassifier` against `BagOfWords(...) | classifier`, bit for bit.
"""
