"""Model specs: build river estimators from strings like `"AROW(r=0.1)"`, without `eval`.

A spec is a Python expression read with `ast` and checked node by node: calls of classes
(river or river_cw estimators, optimizers, losses ...), literal arguments, nested calls and
`|` for pipelines. A bare name is looked up in `river_cw`; a dotted name starts at `river`
or `river_cw` (a leading `river.` may be left out).

>>> parse("AROW(r=0.1)").r
0.1
>>> parse("river.linear_model.PAClassifier(C=0.01)").C
0.01
>>> print(prepare(parse("river.linear_model.PAClassifier()"), text=True, labels=["ham", "spam"]))
TextClassifier(BinaryLabels(PAClassifier))
>>> print(prepare(parse("river.linear_model.PAClassifier()"), text=True))  # labels unknown
TextClassifier(OneVsRestClassifier(PAClassifier))
>>> parse("__import__('os').system('ls')")
Traceback (most recent call last):
...
ValueError: model spec "__import__('os').system('ls')": "__import__('os')" is not a class name

"""

from __future__ import annotations

import ast
import importlib

from river import base, compose

import river_cw
from river_cw import text as text_features
from streams.models.labels import arrange, needs_booleans

__all__ = ["classifier_of", "parse", "prepare"]

ROOTS = ("river_cw", "river")


def parse(spec: str) -> base.Estimator:
    """Build the estimator a spec describes; `ValueError` says what is wrong with it.

    Parameters
    ----------
    spec
        A Python expression of estimator calls with literal arguments, joined by ``|`` into
        a pipeline: ``"AROW(r=0.1)"`` (a class of `river_cw`), ``"river.linear_model.
        PAClassifier()"`` or ``"linear_model.PAClassifier()"`` (river's), ``"preprocessing.
        StandardScaler() | AROW()"``. Nothing else is evaluated.

    Examples
    --------

    >>> parse("AROW(r=0.1)")
    AROW (
      r=0.1
      covariance="arrowhead"
      diagonal="drop"
      initial_variance=1.
      learn_intercept=True
      forgetting="auto"
      calibrate=True
      initial_intercept_variance=100.
      centre=True
    )
    >>> parse("os.system('ls')")
    Traceback (most recent call last):
    ...
    ValueError: unknown model 'os.system': no river.os.system

    """
    try:
        tree = ast.parse(spec.strip(), mode="eval")
    except SyntaxError as error:
        raise ValueError(f"cannot parse model spec {spec!r}: {error.msg}") from None
    return _build(tree.body, spec)


def _build(node: ast.AST, spec: str):
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _build(node.left, spec) | _build(node.right, spec)
    if isinstance(node, ast.Call):
        cls = _resolve(node.func, spec)
        args = [_value(arg, spec) for arg in node.args]
        kwargs = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise ValueError(f"**kwargs are not allowed in model spec {spec!r}")
            kwargs[keyword.arg] = _value(keyword.value, spec)
        try:
            return cls(*args, **kwargs)
        except (TypeError, ValueError) as error:
            raise ValueError(f"cannot build {ast.unparse(node)}: {error}") from None
    if isinstance(node, (ast.Name, ast.Attribute)):
        return _build(ast.Call(func=node, args=[], keywords=[]), spec)
    raise ValueError(
        f"model spec {spec!r}: expected a class call such as AROW(r=0.1), got {ast.unparse(node)!r}"
    )


def _value(node: ast.AST, spec: str):
    if isinstance(node, ast.Call) or (
        isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr)
    ):
        return _build(node, spec)
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ValueError(
            f"model spec {spec!r}: {ast.unparse(node)!r} is not a literal or a call"
        ) from None


def _resolve(node: ast.AST, spec: str) -> type:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise ValueError(f"model spec {spec!r}: {ast.unparse(node)!r} is not a class name")
    parts = [node.id, *reversed(parts)]
    name = ".".join(parts)
    if len(parts) == 1:
        obj = getattr(river_cw, name, None)
        if obj is None:
            raise ValueError(
                f"unknown model {name!r}: river_cw has no such class; "
                f"for river's, write e.g. river.linear_model.PAClassifier()"
            )
    else:
        if parts[0] not in ROOTS:
            parts = ["river", *parts]
        obj = _lookup(parts)
        if obj is None:
            raise ValueError(f"unknown model {name!r}: no {'.'.join(parts)}")
    if not (isinstance(obj, type) and issubclass(obj, base.Base)):
        raise ValueError(f"{name!r} is not a river estimator class")
    return obj


def _lookup(parts: list[str]) -> object:
    """The object at a dotted path, importing the longest module prefix that exists."""
    for split in range(len(parts), 0, -1):
        obj: object
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attr in parts[split:]:
            obj = getattr(obj, attr, None)
        return obj
    return None


def prepare(model: base.Estimator, text: bool = False, labels=None) -> base.Estimator:
    """Fit a parsed model to a stream: its labels, and a bag of words for text.

    A model that learns only booleans (a river binary classifier, or a pipeline or composition
    ending in one) is fitted to the stream's `labels` by `streams.models.labels.arrange`; with
    `labels` unknown (None), by river's `OneVsRestClassifier`. For text streams (`x = {"text":
    str}`) a model that is not a pipeline (whose author chose the features) becomes
    `river_cw.text.TextClassifier(model, on="text")` (`BagOfWords(on="text") | model` with the
    same numbers, on the fused text path where the compiled engine learns); the labels are
    arranged inside it, so that the text is counted once.

    Parameters
    ----------
    model
        A model, as `parse` builds it.
    text
        The stream's examples are texts, ``{"text": str}``.
    labels
        The stream's labels, or None when they are not known.

    Examples
    --------

    >>> model = prepare(parse("AROW()"), text=True)
    >>> type(model).__name__, model.on, type(classifier_of(model)).__name__
    ('TextClassifier', 'text', 'AROW')

    """
    if not isinstance(model, base.Classifier):
        raise ValueError(f"{type(model).__name__} is not a classifier")
    pipeline = isinstance(model, compose.Pipeline)
    if labels is not None:
        model = arrange(model, labels)
    elif needs_booleans(model):
        from river import multiclass  # river.multiclass loads river.linear_model

        model = multiclass.OneVsRestClassifier(model)
    if text and not pipeline:
        model = text_features.TextClassifier(model, on="text")
    return model


def classifier_of(model: base.Estimator) -> base.Estimator:
    """The classifier that holds a prepared model's weights: the last step of a pipeline, the
    classifier of a `TextClassifier`, else the model itself.

    Parameters
    ----------
    model
        A model, as `prepare` returns it.

    Examples
    --------

    >>> classifier_of(parse("preprocessing.StandardScaler() | AROW(r=0.5)")).r
    0.5

    """
    if isinstance(model, compose.Pipeline):
        model = list(model.steps.values())[-1]
    if isinstance(model, text_features.TextClassifier):
        model = model.classifier
    return model
