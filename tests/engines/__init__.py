"""The covariance engines: the diagonal (`river_cw/_engines/_diagonal.c`, `_batch.h`, `_steps.h`,
`_exact.h`), the arrowhead (`river_cw/_engines/_arrowhead.c`) and voted RDA's (`river_cw/_engines/_rda.c`), each
against its pure-Python engine and its formulas.

- test_diagonal.py, test_arrowhead.py: each covariance family's update against the dense
  full-covariance step of `tests.support.reference`, seen through the family;
- test_compiled_vs_python.py: `_diagonal.c` and `_arrowhead.c` against the Python engines, bit
  for bit; test_rda_compiled_vs_python.py: `_rda.c` against voted RDA's Python engine;
- test_native_steps.py (each rule's C step), test_lean_exact.py (the exact schemes on the lean
  path), test_batch_kernels.py (`learn_many` / `predict_many` kernels on dicts and CSR);
- test_marks_and_changes.py: `mark`, `changed`, `set_weights` of both compiled engines;
- test_engine_switch.py, test_rerun_on_other_engine.py: choosing the engine, and the
  engine-sensitive modules again on the other one;
- test_sanitizers.py (ASan/UBSan build), test_reference_counts.py (leaks),
  test_instructions.py (callgrind instruction counts).
"""
