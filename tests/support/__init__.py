"""What the tests share: bits.py, "the same to the bit" (`bits`, `state`, `assert_same`); and
reference.py, the papers' full-covariance updates transcribed in dense numpy (the oracle).
"""
