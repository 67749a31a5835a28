"""The engines: where the numbers live, compiled and in pure Python. Private: a model is the API.

A model (`river_cw.AROW`, ...) holds an engine chosen by its covariance through the registry,
`river_cw.covariances`, and asks it for scores, updates, blocks and marks; nothing outside
`river_cw` imports this package (tests/project/test_import_layers.py). From the ground up:

- `gaussian`: the update every Gaussian engine shares (forgetting, the rule's step, outcomes);
- `diagonal`, `arrowhead`, `full`: the Gaussian engines by covariance, each a readable
  pure-Python reference with its compiled twin (`_diagonal.c`, `_arrowhead.c`; the full one's
  kernels in `_full.c`), the same to the bit; `_marks`: what changed since a mark, and the
  Python engines' block layout;
- `rda_engine`: voted RDA's engine (`_rda.c` compiled);
- `combine_diagonal`, `combine_arrowhead`, `combine_full`: the mixing rules per covariance, on
  the engines' numbers (`river_cw.combine` is the API; the registry names each covariance's);
- the C units: an extension module per `.c` file (`_diagonal`, `_arrowhead`, `_full`, `_rda`,
  and `_text`, the token counting of `river_cw.text`), the headers they include (the shared
  shell `_shell.h`, the input layer `_input.h`, the table `_table.h`, the batch kernel
  `_batch.h`, exact sums, steps and solvers). `river_cw.engine` alone imports the extensions and
  holds the switch to pure Python; CONTRIBUTING.md maps the units.

A pickle of a model names none of these modules (`river_cw.state`); an engine pickled by itself
names its module's restore function (`diagonal._restore_diagonal`, ...).
"""
