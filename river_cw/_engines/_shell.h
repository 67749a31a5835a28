/* The shell of the compiled engines (river_cw/_engines/_diagonal.c, _arrowhead.c, _rda.c): the engine
 * object's common head and every method that is not mathematics, written once. An engine is its
 * payload (the fields it adds to the head) and its kernels (margin, update, the lean path,
 * scores); the shell holds the rest: re-entry (enter, leave), the hooks Python hands over
 * (connect) and the bad input they name, the layout and block methods (add_block, lift, layout,
 * restore_layout; for the Gaussian engines reorder and negate), the blocks' state (`blocks`),
 * marks and changes (mark, changed, set_weights), the margin token, and the object's lifecycle
 * and garbage collection (traverse, clear, dealloc).
 *
 * To join the shell, an engine includes _input.h and _table.h (its RCW_ENTRY_PAYLOAD), then
 * defines, before including this header:
 * - RCW_ENGINE_PAYLOAD: the fields of its object after the head (as RCW_ENTRY_PAYLOAD, the
 *   fields of a table's entry);
 * - RCW_ENGINE_NAME ("diagonal": the messages') and RCW_MODULE_NAME ("river_cw._engines._diagonal");
 * - RCW_BAD_INPUT_VALUE_ERROR: 1 where its Python reference names the bad feature of x on a
 *   ValueError too, 0 where it lets it propagate (bad_input_error);
 * - RCW_ENGINE_HOOKS(X), optional: its Python hooks beyond raise_bad_input, X(name, check) each,
 *   `check(given, name)` judging (and, for token_counts, taking) what connect is given;
 * - RCW_SHELL_WEIGHTS, for an engine whose weights are read and written by entry (the Gaussian
 *   engines, whose payload holds the features' `prior`): reorder, negate, mark, changed,
 *   set_weights, the `blocks` state and the views, with RCW_NUMBERS_DOC (what `changed` gives
 *   per block) and RCW_BLOCKS_DOC (the state's layout) for the docstrings; the engine then
 *   defines the Gaussian kernels declared below (engine_scores...);
 * and, after including it, the hooks it declares below (payload_*, entry_*): plain static
 * functions, called by name, inlined where they are small. The engine's object is `Engine`. Its
 * method table (engine_methods) lists RCW_SHELL_METHODS (the layout's, and the weights'), its
 * getters (engine_getset) RCW_SHELL_GETSET; RCW_SHELL_TYPE and RCW_SHELL_MODULE define its
 * type (with engine_new, its constructor) and module, and shell_module makes the module.
 *
 * Glossary: the terms of the engines' fast paths, in the shell, the engines, _batch.h, _table.h,
 * _input.h and _steps.h.
 * - general path: margin(), the rule's step in Python, update(); the reference's order of work,
 *   which every faster path matches bit for bit and hands an example over to when in doubt
 *   (a value other than a float, an int or a bool, a bad key, a margin beyond float64: the
 *   general path then raises what it raises, naming the bad feature).
 * - native step: a rule's `_step` transcribed in C (_steps.h), named by the rule's
 *   `_native_step`, (name, params); an exact step is its `_exact_step` in C (find_exact_step,
 *   _exact.h).
 * - lean: learn_one's one-call path for the common case, learn_native (the diagonal's
 *   lean_learn): a binary model, a known label, a float weight > 0, a dict, a native or exact
 *   step, nothing forgotten (the arrowhead's: the forgetting its surprise sets, if any). The
 *   model hands its lean spec, (step, scheme, intercept); the lean cache keeps it parsed. Each
 *   Gaussian engine's learn_rows takes the same path for a binary model's dict rows, and its
 *   own lean CSR rows (the lean row hook of _batch.h) straight from the arrays.
 * - enter: the re-entry guard (busy). A call that holds the engine's scratch refuses to be
 *   re-entered from Python code it runs (a key's __eq__, a scheme); a Python step runs with the
 *   engine free, and what it changes is checked afterwards (the margin token, the generation).
 * - margin token: the number of the last margin, which update takes only with the tables as
 *   that margin left them (token_holds); 0: no margin to update.
 * - generation: counts the changes of the tables that add or move entries (appends of new
 *   features, set_weights, reshapes) and the arrowhead's updates; the diagonal's updates rewrite
 *   the entries their margin read in place without it (their margin token ends with them), so
 *   what an engine keeps of a pass for the next call on the same x (scored_holds) also ends
 *   where the scratch is released. `reshaped` counts every change but appends (entries moved or
 *   rewritten, as by negate; blocks added, replaced or reordered): reshape() bumps both and
 *   drops the last margin.
 * - checked and unchecked update: the diagonal's update_core computes every new (mean,
 *   variance) first and writes them only if all are finite (checked); a built-in scheme whose
 *   means stay far from float64's limit (mean_bound, a bound of every |mean|) writes each
 *   straight into its entry (unchecked). The arrowhead's update_with does the same with its
 *   bounds of |a_j|, |k_j| and c_j.
 * - certified sum: a double-double sum whose error bound proves it equals math.fsum's result;
 *   where the bound cannot, the terms are summed again by math.fsum's algorithm (_fsum.h).
 * - epoch (learn_rows on CSR arrays): the calls over which the batch cache's resolved columns
 *   stay valid, so that a column is hashed and looked up once per epoch, not per batch; a
 *   reshape, a new intercept or a call that fails ends it (BatchCache in _batch.h). In an epoch
 *   a plain row holds only columns resolved good, each once; a lazy call leaves that check to
 *   the lean kernel as it reads each row; the cache is settled when the last call ended well;
 *   catch-up gives the features other learning appended to the columns they are.
 * - short key: an entry's copy of a short ASCII str key, compared instead of the key (_table.h).
 */
#ifndef RIVER_CW_SHELL_H
#define RIVER_CW_SHELL_H

#include <Python.h>
#include <stddef.h>
#include <stdint.h>

#include "_input.h"
#include "_table.h"

#if !defined(RCW_ENGINE_PAYLOAD) || !defined(RCW_ENGINE_NAME) || !defined(RCW_MODULE_NAME) || \
    !defined(RCW_BAD_INPUT_VALUE_ERROR)
#error "define RCW_ENGINE_PAYLOAD, RCW_ENGINE_NAME, RCW_MODULE_NAME, RCW_BAD_INPUT_VALUE_ERROR first"
#endif
#ifndef RCW_ENGINE_HOOKS
#define RCW_ENGINE_HOOKS(X) /* raise_bad_input alone */
#endif

/* the margin token (see the glossary): the last margin's number (0: none), the number the next
 * one takes after, and the engine's generation when the last one was taken */
typedef struct {
    uint64_t last, next, generation;
} MarginToken;

/* The engine object: the shell's head, then the engine's payload */
typedef struct {
    PyObject_HEAD
    Blocks blocks;       /* the weights: one table per block (_table.h) */
    uint64_t generation; /* bumped by the changes that add or move entries (see the glossary) */
    uint64_t reshaped;   /* and by every one but new entries appended (reshape) */
    Mark mark;           /* a mark (engine_mark), held by the tables (_table.h) */
    MarginToken token;   /* the last margin, for update */
    int busy;            /* refuses re-entry from Python code the engine runs (enter) */
    PyObject *weakreflist;
    RCW_ENGINE_PAYLOAD
} Engine;

/* ---------------------------------------------------------------------------------------- */
/* the hooks each engine defines (after including this header)                               */

/* the margin scratch emptied: the coordinates' keys released, no margin to update (token_drop) */
static void payload_drop_margin(Engine *self);
/* the payload's references visited (tp_traverse), cleared (tp_clear: what may hold a cycle, the
 * margin's keys aside, which payload_drop_margin drops), and its memory freed (tp_dealloc) */
static int payload_traverse(Engine *self, visitproc visit, void *arg);
static void payload_clear(Engine *self);
static void payload_free(Engine *self);
/* the bytes the payload holds beyond the object (__sizeof__) */
static Py_ssize_t payload_bytes(const Engine *self);
#ifdef RCW_SHELL_WEIGHTS
/* an entry of block 0 negated: the Gaussian over -w (negate) */
static void entry_negate(Entry *e);
/* an entry's numbers, as a new list (the `blocks` state) or tuple (`changed`); NULL on error */
static PyObject *entry_numbers(const Engine *self, const Entry *e, int as_list);
/* the numbers of `key`'s weight w (set_weights, `blocks`) into *out; 0, or -1 with an error */
static int entry_read(Engine *self, PyObject *key, PyObject *w, Payload *out);
/* an entry written by set_weights: the bounds the update keeps grown to hold it */
static void entry_written(Engine *self, const Entry *e);
/* after the blocks were replaced (the `blocks` setter) */
static void payload_replaced(Engine *self);
/* the views (block_views): what an entry's view needs of its block, into ctx[2] (the
 * arrowhead's root); an entry's mean or (`variance`) marginal variance */
static void view_context(const Engine *self, const Table *t, double *ctx);
static double entry_view(const Engine *self, const Entry *e, const double *ctx, int variance);
/* the kernels: every Gaussian engine's methods (river_cw._engines.gaussian's engines), whose
 * arguments and results are the same in each engine; see the engines */
static PyObject *engine_scores(Engine *self, PyObject *x);
static PyObject *engine_score_variances(Engine *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *engine_learn(Engine *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *engine_learn_native(Engine *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *engine_score_native(Engine *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *engine_score_rows(Engine *self, PyObject *args);
#endif

/* ---------------------------------------------------------------------------------------- */
/* the Python hooks, handed over by their owners when river_cw is imported (`connect`, see
 * river_cw.engine): the engine looks up no Python name itself                                */

#define RCW_HOOK_FIELD(name, check) PyObject *name;
typedef struct {
    PyObject *raise_bad_input; /* x -> raises the error naming x's bad feature */
    RCW_ENGINE_HOOKS(RCW_HOOK_FIELD)
} Hooks;
#undef RCW_HOOK_FIELD

static Hooks hooks;

/* a connected hook, or NULL with a RuntimeError naming it */
static inline PyObject *connected(PyObject *hook, const char *name) {
    if (hook == NULL)
        PyErr_Format(PyExc_RuntimeError,
                     RCW_MODULE_NAME ": the hook %s is not connected (importing river_cw "
                     "connects it)",
                     name);
    return hook;
}

/* connect's checks of what it is given for a hook: anything; a type; TokenCounts' type, which
 * _token_counts.h takes; 0, or -1 with an error */
static inline int hook_any(PyObject *given, const char *name) { return 0; }

static inline int hook_type(PyObject *given, const char *name) {
    if (PyType_Check(given)) return 0;
    PyErr_Format(PyExc_TypeError, "%s must be a type", name);
    return -1;
}

static inline int hook_token_counts(PyObject *given, const char *name) {
    return rcw_token_counts_connect(given);
}

/* connect(raise_bad_input=None, ...): the hooks given, each by the module that owns it, every
 * one checked before any is kept */
static PyObject *module_connect(PyObject *module, PyObject *args, PyObject *kwds) {
#define RCW_HOOK_NAME(name, check) #name,
#define RCW_HOOK_FORMAT(name, check) "O"
#define RCW_HOOK_ARG(name, check) , &given.name
#define RCW_HOOK_CHECK(name, check) || (given.name != NULL && check(given.name, #name) < 0)
#define RCW_HOOK_KEEP(name, check) \
    if (given.name != NULL) Py_XSETREF(hooks.name, Py_NewRef(given.name));
    static char *kwlist[] = {"raise_bad_input", RCW_ENGINE_HOOKS(RCW_HOOK_NAME) NULL};
    Hooks given = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$O" RCW_ENGINE_HOOKS(RCW_HOOK_FORMAT), kwlist,
                                     &given.raise_bad_input RCW_ENGINE_HOOKS(RCW_HOOK_ARG)))
        return NULL;
    if (0 RCW_ENGINE_HOOKS(RCW_HOOK_CHECK)) return NULL;
    RCW_HOOK_KEEP(raise_bad_input, hook_any)
    RCW_ENGINE_HOOKS(RCW_HOOK_KEEP)
    Py_RETURN_NONE;
#undef RCW_HOOK_NAME
#undef RCW_HOOK_FORMAT
#undef RCW_HOOK_ARG
#undef RCW_HOOK_CHECK
#undef RCW_HOOK_KEEP
}

#define RCW_SHELL_MODULE_METHODS                                                                 \
    {"connect", (PyCFunction)(void (*)(void))module_connect, METH_VARARGS | METH_KEYWORDS,       \
     "Hand the engine its Python hooks (river_cw does it when imported)."},

/* ---------------------------------------------------------------------------------------- */
/* bad input                                                                                  */

/* name the bad feature of x as the Python engine does (or report the overflow); NULL */
static PyObject *raise_bad_input(PyObject *x) {
    return rcw_raise_bad_input(hooks.raise_bad_input, RCW_MODULE_NAME, x);
}

/* Whether the pending error, raised in a pass over x, is one the engine's Python reference
 * catches around its sums and turns into the error naming x's bad feature: a TypeError or an
 * OverflowError in every engine, and a ValueError (math.fsum of inf and -inf) where
 * RCW_BAD_INPUT_VALUE_ERROR says the reference catches it too (river_cw._engines.arrowhead and
 * river_cw._engines.rda_engine do; river_cw._engines.diagonal does not, so a diagonal engine lets fsum's
 * ValueError through, as its reference does) */
static inline int bad_input_error(void) {
    return PyErr_ExceptionMatches(PyExc_TypeError) ||
           PyErr_ExceptionMatches(PyExc_OverflowError) ||
           (RCW_BAD_INPUT_VALUE_ERROR && PyErr_ExceptionMatches(PyExc_ValueError));
}

/* after an error in a pass over x: a bad input names the bad feature, others propagate */
static inline void bad_or_propagate(PyObject *x) {
    if (bad_input_error()) {
        PyErr_Clear();
        raise_bad_input(x);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* re-entry, reshapes and the margin token                                                    */

static int enter(Engine *self) {
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError,
                        "the " RCW_ENGINE_NAME " engine was re-entered (from Python code it "
                        "was running, such as a feature's __eq__)");
        return -1;
    }
    self->busy = 1;
    return 0;
}

/* the engine free again (Python code may call it) */
static inline void leave(Engine *self) { self->busy = 0; }

#ifdef RCW_SHELL_WEIGHTS
/* score_variances(x, blocks=None)'s arguments (args, nargs): its blocks, every block (listed
 * NULL, count the blocks') or those a tuple or list of ints in [0, n_blocks) names, in its order
 * (river_cw._engines.gaussian's selected_blocks, with the same refusals); read with
 * selected_block, released with release_selection */
typedef struct {
    PyObject *listed; /* the blocks listed, a tuple of ints (a new reference), or NULL for all */
    Py_ssize_t count;
} BlockSelection;

static int select_blocks(Engine *self, PyObject *const *args, Py_ssize_t nargs,
                         BlockSelection *s) {
    PyObject *blocks = nargs > 1 ? args[1] : Py_None;
    Py_ssize_t i, b;
    s->listed = NULL;
    s->count = self->blocks.n;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "score_variances(x, blocks=None)");
        return -1;
    }
    if (blocks == Py_None) return 0;
    if (!PyTuple_Check(blocks) && !PyList_Check(blocks)) {
        PyErr_SetString(PyExc_TypeError, "blocks is a tuple or list of block indices");
        return -1;
    }
    /* a tuple: a list could change while a key's __eq__ runs */
    if ((s->listed = PySequence_Tuple(blocks)) == NULL) return -1;
    s->count = PyTuple_GET_SIZE(s->listed);
    for (i = 0; i < s->count; i++) {
        PyObject *item = PyTuple_GET_ITEM(s->listed, i);
        if (!PyLong_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "a block index is an int");
            break;
        }
        b = PyLong_AsSsize_t(item);
        if (b == -1 && PyErr_Occurred()) PyErr_Clear();
        if (b < 0 || b >= self->blocks.n) {
            PyErr_SetString(PyExc_IndexError, "block index out of range");
            break;
        }
    }
    if (i == s->count) return 0;
    Py_CLEAR(s->listed);
    return -1;
}

static inline Py_ssize_t selected_block(const BlockSelection *s, Py_ssize_t i) {
    return s->listed == NULL ? i : PyLong_AsSsize_t(PyTuple_GET_ITEM(s->listed, i));
}

static inline void release_selection(BlockSelection *s) { Py_CLEAR(s->listed); }
#endif

/* after the tables changed other than by learning (see the glossary: generation): the last
 * margin is dropped, and a mark taken before holds no more */
static void reshape(Engine *self) {
    payload_drop_margin(self);
    self->generation++;
    self->reshaped++;
}

/* the margin just taken named by the next token, with the tables as they are */
static inline void token_take(Engine *self) {
    self->token.last = ++self->token.next;
    self->token.generation = self->generation;
}

/* no margin to update */
static inline void token_drop(Engine *self) { self->token.last = 0; }

/* whether `token` names the last margin, with the tables as it left them */
static inline int token_holds(const Engine *self, uint64_t token) {
    return token != 0 && token == self->token.last && self->token.generation == self->generation;
}

/* token_holds, or -1 with a RuntimeError (the engine changed since, as during a rule's step) */
static inline int token_check(const Engine *self, uint64_t token) {
    if (token_holds(self, token)) return 0;
    PyErr_SetString(PyExc_RuntimeError,
                    "update needs the latest margin, with the engine as that margin left it");
    return -1;
}

/* ---------------------------------------------------------------------------------------- */
/* the object                                                                                 */

/* a new engine of `type` with one empty block (its payload zeroed), or NULL with an error */
static Engine *engine_alloc(PyTypeObject *type) {
    Engine *self = (Engine *)type->tp_alloc(type, 0);
    if (self != NULL && blocks_init(&self->blocks) < 0) Py_CLEAR(self);
    return self;
}

static int engine_traverse(Engine *self, visitproc visit, void *arg) {
    if (blocks_traverse(&self->blocks, visit, arg) < 0) return -1;
    return payload_traverse(self, visit, arg);
}

static int engine_clear(Engine *self) {
    payload_clear(self);
    blocks_clear(&self->blocks);
    self->mark.taken = 0;
    reshape(self); /* drops the margin */
    return 0;
}

static void engine_dealloc(Engine *self) {
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject *)self);
    engine_clear(self);
    PyMem_Free(self->blocks.table);
    payload_free(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* the type's slots the shell fills (the engine adds its name, flags, doc, new, methods and
 * getset) */
#define RCW_SHELL_TYPE_SLOTS                                                                     \
    .tp_basicsize = sizeof(Engine), .tp_dealloc = (destructor)engine_dealloc,                     \
    .tp_traverse = (traverseproc)engine_traverse, .tp_clear = (inquiry)engine_clear,             \
    .tp_weaklistoffset = offsetof(Engine, weakreflist)

/* the module of `def` holding the engine's `type` as `name`; NULL with an error */
static PyObject *shell_module(struct PyModuleDef *def, PyTypeObject *type, const char *name) {
    PyObject *m;
    if (PyType_Ready(type) < 0 || (m = PyModule_Create(def)) == NULL) return NULL;
    Py_INCREF(type);
    if (PyModule_AddObject(m, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

/* the engine's type, `Type`, named `name`, with `flags` beside the shell's: its slots are the
 * shell's, its constructor, methods and getters the engine's engine_new, engine_methods and
 * engine_getset */
#define RCW_SHELL_TYPE(Type, name, flags, doc)                                                   \
    static PyTypeObject Type = {                                                                 \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = name,                                           \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | (flags),                           \
        .tp_doc = doc,                                                                           \
        .tp_new = engine_new,                                                                    \
        .tp_methods = engine_methods,                                                            \
        .tp_getset = engine_getset,                                                              \
        RCW_SHELL_TYPE_SLOTS,                                                                    \
    }

/* the engine's module, `moduledef`: its doc, and its functions (module_methods), connect and
 * those listed after the doc */
#define RCW_SHELL_MODULE(doc, ...)                                                               \
    static PyMethodDef module_methods[] = {RCW_SHELL_MODULE_METHODS __VA_ARGS__{NULL}};          \
    static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, RCW_MODULE_NAME, doc, -1,     \
                                           module_methods}

/* __sizeof__(): the bytes the engine holds, its keys excluded */
static PyObject *engine_sizeof(Engine *self, PyObject *unused) {
    return PyLong_FromSsize_t(Py_TYPE(self)->tp_basicsize + blocks_bytes(&self->blocks) +
                              blocks_mark_bytes(&self->blocks) + payload_bytes(self));
}

/* ---------------------------------------------------------------------------------------- */
/* the blocks' layout: blocks named by id, so that a failed learn can drop the blocks it added */

/* a new empty block at `at`: add_block (at the end) and lift (in front) */
static PyObject *insert_block(Engine *self, Py_ssize_t at) {
    int r;
    if (enter(self) < 0) return NULL;
    if ((r = blocks_insert(&self->blocks, at)) == 0) reshape(self);
    leave(self);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *engine_add_block(Engine *self, PyObject *unused) {
    return insert_block(self, self->blocks.n);
}

static PyObject *engine_lift(Engine *self, PyObject *unused) { return insert_block(self, 0); }

static PyObject *engine_layout(Engine *self, PyObject *unused) {
    return blocks_layout(&self->blocks);
}

/* restore_layout(ids): the blocks of an earlier `layout` (blocks_restore) */
static PyObject *engine_restore_layout(Engine *self, PyObject *layout) {
    int r;
    if (enter(self) < 0) return NULL;
    if ((r = blocks_restore(&self->blocks, layout)) == 0) reshape(self);
    leave(self);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

#define RCW_SHELL_LAYOUT_METHODS                                                                 \
    {"add_block", (PyCFunction)engine_add_block, METH_NOARGS, "Append an empty block."},          \
        {"lift", (PyCFunction)engine_lift, METH_NOARGS, "Insert an empty block in front."},       \
        {"layout", (PyCFunction)engine_layout, METH_NOARGS, "A snapshot of the block structure."}, \
        {"restore_layout", (PyCFunction)engine_restore_layout, METH_O,                            \
         "Undo lift/add_block calls made since the layout was taken."},                           \
        {"__sizeof__", (PyCFunction)engine_sizeof, METH_NOARGS, "Bytes held, keys excluded."},

#ifndef RCW_SHELL_WEIGHTS
#define RCW_SHELL_METHODS RCW_SHELL_LAYOUT_METHODS
#define RCW_SHELL_GETSET
#else

/* reorder(order): block i becomes the old block order[i] (a permutation) */
static PyObject *engine_reorder(Engine *self, PyObject *order) {
    Py_ssize_t n;
    long long *ids;
    int r;
    if (enter(self) < 0) return NULL;
    leave(self); /* an index's __index__ is Python's */
    if ((ids = order_ids(&self->blocks, order, &n)) == NULL) return NULL;
    if (enter(self) < 0) { /* as any call: Python code ran */
        PyMem_Free(ids);
        return NULL;
    }
    if ((r = blocks_arrange(&self->blocks, ids, n)) == 0) reshape(self);
    leave(self);
    PyMem_Free(ids);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

/* negate(): the Gaussian over -w (block 0's entries negated: entry_negate) */
static PyObject *engine_negate(Engine *self, PyObject *unused) {
    Py_ssize_t i;
    if (enter(self) < 0) return NULL;
    if (self->blocks.n > 0)
        for (i = 0; i < self->blocks.table[0].used; i++)
            entry_negate(&self->blocks.table[0].entries[i]);
    reshape(self);
    leave(self);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------- */
/* the blocks' state: a list of dicts, feature -> its numbers (the Python engine's layout)     */

/* the n numbers of a weight w (a sequence of n numbers) into out; 0, or -1 with an error (a
 * ValueError saying what a weight is, `what`, where w is no sequence of n) */
static int read_numbers(PyObject *w, Py_ssize_t n, double *out, const char *what) {
    PyObject *items = PySequence_Fast(w, what);
    Py_ssize_t j;
    if (items == NULL) return -1;
    if (PySequence_Fast_GET_SIZE(items) != n) {
        Py_DECREF(items);
        PyErr_SetString(PyExc_ValueError, what);
        return -1;
    }
    for (j = 0; j < n && !PyErr_Occurred(); j++)
        out[j] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(items, j));
    Py_DECREF(items);
    return PyErr_Occurred() ? -1 : 0;
}

/* every block as a dict keyed by feature (a new list), of its entries' means (`which` 0) or
 * marginal variances (1) (entry_view), or numbers (2: the `blocks` state, entry_numbers) */
static PyObject *block_dicts(Engine *self, int which) {
    PyObject *out;
    Py_ssize_t b, i;
    if (enter(self) < 0) return NULL;
    out = PyList_New(self->blocks.n);
    for (b = 0; out != NULL && b < self->blocks.n; b++) {
        Table *t = &self->blocks.table[b];
        PyObject *d = PyDict_New();
        double ctx[2];
        if (d == NULL) goto fail;
        PyList_SET_ITEM(out, b, d);
        view_context(self, t, ctx);
        for (i = 0; i < t->used; i++) {
            const Entry *e = &t->entries[i];
            PyObject *w = which == 2 ? entry_numbers(self, e, 1)
                                     : PyFloat_FromDouble(entry_view(self, e, ctx, which));
            if (w == NULL || PyDict_SetItem(d, e->key, w) < 0) {
                Py_XDECREF(w);
                goto fail;
            }
            Py_DECREF(w);
        }
    }
    leave(self);
    return out;
fail:
    Py_XDECREF(out);
    leave(self);
    return NULL;
}

/* block_views(): per block, {feature: mean} and {feature: marginal variance} */
static PyObject *engine_block_views(Engine *self, PyObject *unused) {
    PyObject *means = block_dicts(self, 0), *variances;
    if (means == NULL) return NULL;
    if ((variances = block_dicts(self, 1)) == NULL) {
        Py_DECREF(means);
        return NULL;
    }
    return Py_BuildValue("NN", means, variances);
}

static PyObject *engine_get_blocks(Engine *self, void *closure) { return block_dicts(self, 2); }

/* initial_variance: the features' prior variance (the payload's `prior`) */
static PyObject *engine_get_prior(Engine *self, void *closure) {
    return PyFloat_FromDouble(self->prior);
}

/* blocks = a list of dicts, feature -> its numbers (entry_read); checked in full, the tables
 * built apart, before anything changes */
static int engine_set_blocks(Engine *self, PyObject *value, void *closure) {
    PyObject *seq, *key, *w;
    Py_ssize_t n, b, pos, i;
    Table *tables;
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete blocks");
        return -1;
    }
    if ((seq = PySequence_Fast(value, "blocks must be a list of dicts")) == NULL) return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    if ((tables = PyMem_Calloc(n ? n : 1, sizeof(Table))) == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (b = 0; b < n; b++) {
        PyObject *d = PySequence_Fast_GET_ITEM(seq, b);
        if (!PyDict_Check(d)) {
            PyErr_SetString(PyExc_TypeError, "blocks must be a list of dicts");
            goto fail;
        }
        if (block_init(&self->blocks, &tables[b]) < 0 ||
            table_reserve(&tables[b], PyDict_GET_SIZE(d)) < 0)
            goto fail;
        pos = 0;
        while (PyDict_Next(d, &pos, &key, &w)) {
            Payload numbers;
            Py_hash_t h;
            if (entry_read(self, key, w, &numbers) < 0 || (h = PyObject_Hash(key)) == -1)
                goto fail;
            table_push(&tables[b], key, h)->payload = numbers;
        }
    }
    Py_DECREF(seq);
    seq = NULL;
    if (enter(self) < 0) goto fail;
    if (blocks_replace(&self->blocks, tables, n) < 0) {
        leave(self);
        goto fail;
    }
    payload_replaced(self);
    reshape(self);
    PyMem_Free(tables);
    leave(self);
    return 0;
fail:
    Py_XDECREF(seq);
    for (i = 0; i < n; i++) table_free(&tables[i]);
    PyMem_Free(tables);
    return -1;
}

/* ---------------------------------------------------------------------------------------- */
/* marks: the entries written since a point in time (river_cw._engines.gaussian's `mark`)              */

/* mark(): remember every entry's numbers as they are now (blocks_mark: a mark and `changed`
 * cost in proportion to the entries written since, not to the model) */
static PyObject *engine_mark(Engine *self, PyObject *unused) {
    int r;
    if (enter(self) < 0) return NULL;
    r = blocks_mark(&self->blocks, &self->mark, self->reshaped);
    leave(self);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

/* an entry's numbers as `changed` gives them (blocks_changed's EntryNumbers) */
static PyObject *changed_numbers(const Entry *e, const void *self) {
    return entry_numbers(self, e, 0);
}

/* changed(): per block, {feature: numbers} of the entries added since the mark or whose numbers
 * differ from it bit for bit, in table order; None without a mark valid for the current blocks
 * (none taken, or the blocks reshaped since) */
static PyObject *engine_changed(Engine *self, PyObject *unused) {
    PyObject *out;
    if (enter(self) < 0) return NULL;
    out = blocks_changed(&self->blocks, &self->mark, self->reshaped, changed_numbers, self);
    leave(self);
    return out;
}

/* an entry of set_weights' changes, read and looked up before anything is written */
typedef struct {
    Py_ssize_t block, ix; /* ix: the entry's position, -1 when new */
    PyObject *key;        /* a reference */
    Py_hash_t hash;
    Payload numbers;
} Change;

/* set_weights(changes): per block, {feature: numbers} written, a new entry appended in the order
 * given (what `changed` returned, read back); every entry is read (entry_read) and looked up, and
 * room made for the new ones, before anything is written: bad changes leave the engine as it
 * was */
static PyObject *engine_set_weights(Engine *self, PyObject *changes) {
    PyObject *seq, *key, *w;
    Change *planned = NULL;
    Py_ssize_t n, b, pos, total = 0, count = 0, i;
    int ok = 0;
    /* a tuple, which the Python code that reading runs (a key's __eq__) cannot change */
    if ((seq = PySequence_Fast(changes, "changes must be a list of dicts")) == NULL) return NULL;
    if (PyList_Check(seq)) {
        Py_SETREF(seq, PyList_AsTuple(seq));
        if (seq == NULL) return NULL;
    }
    n = PyTuple_GET_SIZE(seq);
    if (n != self->blocks.n) {
        PyErr_Format(PyExc_ValueError, "changes of %zd block(s) for an engine of %zd", n,
                     self->blocks.n);
        Py_DECREF(seq);
        return NULL;
    }
    for (b = 0; b < n; b++) {
        PyObject *d = PyTuple_GET_ITEM(seq, b);
        if (!PyDict_Check(d)) {
            PyErr_SetString(PyExc_TypeError, "changes must be a list of dicts");
            Py_DECREF(seq);
            return NULL;
        }
        total += PyDict_GET_SIZE(d);
    }
    if (enter(self) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    if ((planned = PyMem_Malloc(sizeof(Change) * (total ? total : 1))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (b = 0; b < n; b++) {
        PyObject *d = PyTuple_GET_ITEM(seq, b);
        Table *t = &self->blocks.table[b];
        Py_ssize_t fresh = 0;
        pos = 0;
        while (PyDict_Next(d, &pos, &key, &w)) {
            Change *c = &planned[count];
            if (count == total) {
                PyErr_SetString(PyExc_RuntimeError, "changes changed size during set_weights");
                goto done;
            }
            c->block = b;
            c->key = Py_NewRef(key);
            count++;
            if (entry_read(self, key, w, &c->numbers) < 0 ||
                (c->hash = PyObject_Hash(key)) == -1 || (c->ix = table_find(t, key, c->hash)) == -2)
                goto done;
            fresh += c->ix < 0;
        }
        if (table_reserve(t, fresh) < 0) goto done;
    }
    for (i = 0; i < count; i++) { /* nothing fails from here on */
        const Change *c = &planned[i];
        Table *t = &self->blocks.table[c->block];
        Entry *e;
        if (c->ix >= 0) {
            e = &t->entries[c->ix];
            table_note(t, c->ix);
        } else
            e = table_push(t, c->key, c->hash);
        e->payload = c->numbers;
        entry_written(self, e);
    }
    self->generation++; /* entries may be appended */
    ok = 1;
done:
    for (i = 0; i < count; i++) Py_DECREF(planned[i].key);
    PyMem_Free(planned);
    Py_DECREF(seq);
    leave(self);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

/* learn's outcomes: river_cw._engines.gaussian's NOTHING, APPLIED and SKIPPED */
enum { LEARN_NOTHING = 0, LEARN_APPLIED = 1, LEARN_SKIPPED = 2 };

/* learn(x, pairs, step, scheme, w, keep=1.0, rest=0.0)'s arguments checked, keep and rest read
 * (1 and 0 when not given); 0, or -1 with an error */
static int learn_args(PyObject *const *args, Py_ssize_t nargs, double *keep, double *rest) {
    *keep = 1.0;
    *rest = 0.0;
    if (nargs < 5 || nargs > 7) {
        PyErr_SetString(PyExc_TypeError, "learn(x, pairs, step, scheme, w, keep=1.0, rest=0.0)");
        return -1;
    }
    if ((nargs > 5 && (*keep = PyFloat_AsDouble(args[5])) == -1.0 && PyErr_Occurred()) ||
        (nargs > 6 && (*rest = PyFloat_AsDouble(args[6])) == -1.0 && PyErr_Occurred()))
        return -1;
    return 0;
}

/* the rule's step(m, v, w), or step(m, v, u, w) for an exact scheme (scheme None; the terms u
 * then), as river_cw._engines.gaussian._learn calls it, with the engine free: LEARN_APPLIED with *alpha,
 * *gamma and a new reference to the scheme to update with, LEARN_NOTHING, LEARN_SKIPPED
 * (float64 cannot express the step), or -1 with an error */
static int rule_step(PyObject *step, PyObject *scheme, double m, double v, PyObject *terms,
                     PyObject *w, double *alpha, double *gamma, PyObject **update_scheme) {
    PyObject *call[4], *result;
    Py_ssize_t n = 0, i;
    int exact = scheme == Py_None, outcome = -1;
    call[n++] = PyFloat_FromDouble(m);
    call[n++] = PyFloat_FromDouble(v);
    if (exact) call[n++] = Py_NewRef(terms);
    call[n++] = Py_NewRef(w);
    result = call[0] && call[1] ? PyObject_Vectorcall(step, call, (size_t)n, NULL) : NULL;
    for (i = 0; i < n; i++) Py_XDECREF(call[i]);
    if (result == NULL) {
        if (PyErr_ExceptionMatches(PyExc_ZeroDivisionError) ||
            PyErr_ExceptionMatches(PyExc_OverflowError)) { /* float64 cannot express the step */
            PyErr_Clear();
            return LEARN_SKIPPED;
        }
        return -1;
    }
    if (result == Py_None) {
        Py_DECREF(result);
        return LEARN_NOTHING;
    }
    if (!PyTuple_Check(result) || PyTuple_GET_SIZE(result) != (exact ? 3 : 2)) {
        PyErr_SetString(PyExc_TypeError, "a step is None, (alpha, gamma) or, exact, "
                                         "(alpha, gamma, scheme)");
        goto done;
    }
    *alpha = PyFloat_AsDouble(PyTuple_GET_ITEM(result, 0));
    *gamma = PyFloat_AsDouble(PyTuple_GET_ITEM(result, 1));
    if (PyErr_Occurred()) goto done;
    outcome = LEARN_SKIPPED; /* with v near 0 and a violated constraint, a step can overflow */
    if (isfinite(*alpha) && isfinite(*gamma)) {
        *update_scheme = Py_NewRef(exact ? PyTuple_GET_ITEM(result, 2) : scheme);
        outcome = LEARN_APPLIED;
    }
done:
    Py_DECREF(result);
    return outcome;
}

#define RCW_SHELL_WEIGHT_METHODS                                                                 \
    {"scores", (PyCFunction)engine_scores, METH_O, "mu_b . x for every block b."},                \
        {"score_variances", (PyCFunction)(void (*)(void))engine_score_variances, METH_FASTCALL,   \
         "score_variances(x, blocks=None): the variance of each block's score, x' Sigma_b x, "   \
         "of every block or of those listed."},                                                  \
        {"learn", (PyCFunction)(void (*)(void))engine_learn, METH_FASTCALL,                       \
         "margin, the rule's step and update: 0 nothing to learn, 1 applied, 2 skipped."},        \
        {"learn_native", (PyCFunction)(void (*)(void))engine_learn_native, METH_FASTCALL,         \
         "learn of a binary model with the rule's step in C; -1: the general path's case."},      \
        {"score_native", (PyCFunction)(void (*)(void))engine_score_native, METH_FASTCALL,         \
         "A binary model's score of x (and its variance) in one call; None: the general "         \
         "path's."},                                                                              \
        {"score_rows", (PyCFunction)engine_score_rows, METH_VARARGS,                              \
         "score_native of every row of a batch (dicts or CSR arrays), or their probabilities; "   \
         "None: the general path's row."},                                                        \
        {"block_views", (PyCFunction)engine_block_views, METH_NOARGS,                             \
         "Per block, {feature: mean} and {feature: marginal variance}."},                         \
        {"reorder", (PyCFunction)engine_reorder, METH_O,                                          \
         "Block i becomes the old block order[i]."},                                              \
        {"negate", (PyCFunction)engine_negate, METH_NOARGS, "The Gaussian over -w."},             \
        {"mark", (PyCFunction)engine_mark, METH_NOARGS,                                           \
         "Remember every entry's numbers as they are now."},                                     \
        {"changed", (PyCFunction)engine_changed, METH_NOARGS,                                     \
         "Per block, " RCW_NUMBERS_DOC " of the entries written since the mark; None without a "  \
         "mark valid for the current blocks."},                                                   \
        {"set_weights", (PyCFunction)engine_set_weights, METH_O,                                  \
         "Write per block " RCW_NUMBERS_DOC " (what changed returned)."},

#define RCW_SHELL_METHODS RCW_SHELL_LAYOUT_METHODS RCW_SHELL_WEIGHT_METHODS

/* the Gaussian engines' getters: the `blocks` state (RCW_BLOCKS_DOC says its layout) and the
 * prior */
#define RCW_SHELL_GETSET                                                                  \
    {"blocks", (getter)engine_get_blocks, (setter)engine_set_blocks, RCW_BLOCKS_DOC, NULL},       \
        {"initial_variance", (getter)engine_get_prior, NULL, "The features' prior variance.",     \
         NULL},

#endif /* RCW_SHELL_WEIGHTS */

#endif
