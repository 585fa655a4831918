/*
 * The offset index's walk (jcli_sidecar/ipynb/nbindex.py, jsonscan.py) in C,
 * for a buffer the Python side has read: the same stops, at C speed.
 *
 * A value ends where the walk says:
 *   - a string at the first quote after an even run of backslashes;
 *   - an array or object where its brackets balance, counting '[' '{' up
 *     and ']' '}' down outside strings;
 *   - anything else (a number, true, a stray token) before the first ',' ']'
 *     or '}', less the spacing before it.
 *
 * value_end(buffer, pos, limit) -> the index just after the value at
 *     buffer[pos]; -1 when it runs past the end of the buffer (a longer one
 *     may hold it); -2 when the walk itself has to decide: brackets that
 *     close more than they open, nesting deeper than limit, an empty scalar.
 * cells(buffer, pos, limit, base) -> the spans of the whole cells from
 *     buffer[pos] on, as nbindex records them (see cells() below).
 * resume(buffer, pos, limit, depth, state) -> a string or container walked a
 *     window at a time, the state carried from one window to the next, so a
 *     value of any size is passed in one linear pass (see resume() below).
 *
 * Neither raises for what the buffer holds, reads outside it, or decodes
 * anything: whatever is not plain (an escaped or non-ASCII key, a duplicate
 * key, odd punctuation) is handed back to the Python walk, which stays the
 * one place that reports errors.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* 1 for the bytes the walk stops at inside a container: " [ ] { } */
static unsigned char stops[256];

/* Index after the closing quote of the string whose body starts at i, or -1. */
static Py_ssize_t
string_end(const unsigned char *b, Py_ssize_t n, Py_ssize_t i)
{
    while (i < n) {
        const unsigned char *q = memchr(b + i, '"', (size_t)(n - i));
        if (q == NULL)
            return -1;
        Py_ssize_t k = q - b;
        Py_ssize_t j = k - 1;
        while (b[j] == '\\') /* the opening quote stops the run */
            j--;
        if (((k - 1 - j) & 1) == 0)
            return k + 1;
        i = k + 1;
    }
    return -1;
}

static Py_ssize_t
container_end(const unsigned char *b, Py_ssize_t n, Py_ssize_t i, long limit)
{
    long depth = 0;
    while (i < n) {
        unsigned char c = b[i];
        if (!stops[c]) {
            i++;
            continue;
        }
        if (c == '"') {
            i = string_end(b, n, i + 1);
            if (i < 0)
                return -1;
            continue;
        }
        depth += (c == '[' || c == '{') ? 1 : -1;
        i++;
        if (depth == 0)
            return i;
        if (depth < 0 || depth > limit)
            return -2;
    }
    return -1;
}

static Py_ssize_t
scalar_end(const unsigned char *b, Py_ssize_t n, Py_ssize_t pos)
{
    Py_ssize_t i = pos;
    while (i < n && b[i] != ',' && b[i] != ']' && b[i] != '}')
        i++;
    if (i == n)
        return -1;
    while (i > pos && (b[i - 1] == ' ' || b[i - 1] == '\t' || b[i - 1] == '\n' || b[i - 1] == '\r'))
        i--;
    return i == pos ? -2 : i;
}

static Py_ssize_t
value_at(const unsigned char *b, Py_ssize_t n, Py_ssize_t pos, long limit)
{
    if (pos >= n)
        return -1;
    unsigned char c = b[pos];
    if (c == '"')
        return string_end(b, n, pos + 1);
    if (c == '[' || c == '{')
        return container_end(b, n, pos, limit);
    return scalar_end(b, n, pos);
}

static Py_ssize_t
skip_space(const unsigned char *b, Py_ssize_t n, Py_ssize_t i)
{
    while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r'))
        i++;
    return i;
}

/* Past the separator after an item: the next item's start, or minus the index after close; -1 past the buffer, -2 neither. */
static Py_ssize_t
after_item(const unsigned char *b, Py_ssize_t n, Py_ssize_t i, unsigned char close)
{
    i = skip_space(b, n, i);
    if (i >= n)
        return -1;
    if (b[i] == ',')
        return skip_space(b, n, i + 1) < n ? skip_space(b, n, i + 1) : -1;
    if (b[i] == close)
        return -(i + 1) - 2; /* below -2: the caller undoes the shift */
    return -2;
}

#define MAX_KEYS 64

/*
 * The "outputs" array at b[pos] ('['): its end, with the span of each
 * element appended to items; -1 past the buffer, -2 the walk decides, -3 an
 * exception is set.
 */
static Py_ssize_t
outputs_at(const unsigned char *b, Py_ssize_t n, Py_ssize_t pos, long limit, Py_ssize_t base, PyObject *items)
{
    Py_ssize_t j = skip_space(b, n, pos + 1);
    if (j >= n)
        return -1;
    if (b[j] == ']')
        return j + 1;
    for (;;) {
        Py_ssize_t e = value_at(b, n, j, limit);
        if (e < 0)
            return e;
        PyObject *span = Py_BuildValue("(nn)", base + j, base + e);
        if (span == NULL || PyList_Append(items, span) < 0) {
            Py_XDECREF(span);
            return -3;
        }
        Py_DECREF(span);
        Py_ssize_t next = after_item(b, n, e, ']');
        if (next == -1 || next == -2)
            return next;
        if (next < 0)
            return -(next + 2);
        j = next;
    }
}

/*
 * One cell at b[pos] as nbindex reads it: its end, and in *outputs the
 * span of its "outputs" array with the span of each element,
 * ((start, end), (spans...)), or None when that value is not an array or
 * there is none (a new reference, set only on success).
 * Returns the end (>= 0); -1 past the buffer; -2 the walk decides (a key
 * with an escape or a non-ASCII byte, a duplicate key, odd punctuation);
 * -3 an exception is set.
 */
static Py_ssize_t
cell_at(const unsigned char *b, Py_ssize_t n, Py_ssize_t pos, long limit, Py_ssize_t base, PyObject **outputs)
{
    const unsigned char *keys[MAX_KEYS];
    Py_ssize_t lens[MAX_KEYS];
    int nkeys = 0;
    Py_ssize_t out_start = -1, out_end = -1, result;
    PyObject *items = NULL;
    if (b[pos] != '{')
        return -2;
    Py_ssize_t i = skip_space(b, n, pos + 1);
    if (i >= n)
        return -1;
    if (b[i] == '}') {
        i++;
        goto done;
    }
    for (;;) {
        if (i >= n) {
            result = -1;
            goto fail;
        }
        if (b[i] != '"') {
            result = -2;
            goto fail;
        }
        Py_ssize_t k = i + 1;
        while (k < n && b[k] != '"') {
            if (b[k] == '\\' || b[k] >= 0x80) {
                result = -2;
                goto fail;
            }
            k++;
        }
        if (k >= n) {
            result = -1;
            goto fail;
        }
        const unsigned char *key = b + i + 1;
        Py_ssize_t klen = k - i - 1;
        for (int j = 0; j < nkeys; j++)
            if (lens[j] == klen && memcmp(keys[j], key, (size_t)klen) == 0) {
                result = -2;
                goto fail;
            }
        if (nkeys == MAX_KEYS) {
            result = -2;
            goto fail;
        }
        keys[nkeys] = key;
        lens[nkeys++] = klen;
        i = skip_space(b, n, k + 1);
        if (i < n && b[i] == ':')
            i = skip_space(b, n, i + 1);
        else if (i < n) {
            result = -2;
            goto fail;
        }
        if (i >= n) {
            result = -1;
            goto fail;
        }
        Py_ssize_t end;
        int is_outputs = klen == 7 && memcmp(key, "outputs", 7) == 0;
        if (is_outputs && b[i] == '[') {
            items = PyList_New(0);
            if (items == NULL)
                return -3;
            out_start = i;
            end = outputs_at(b, n, i, limit - 2, base, items);
            out_end = end;
        } else {
            end = value_at(b, n, i, limit - 1);
        }
        if (end < 0) {
            result = end;
            goto fail;
        }
        Py_ssize_t next = after_item(b, n, end, '}');
        if (next == -1 || next == -2) {
            result = next;
            goto fail;
        }
        if (next < 0) {
            i = -(next + 2);
            break;
        }
        i = next;
    }
done:
    if (items == NULL) {
        Py_INCREF(Py_None);
        *outputs = Py_None;
        return i;
    }
    *outputs = Py_BuildValue("((nn)N)", base + out_start, base + out_end, PyList_AsTuple(items));
    Py_DECREF(items);
    return *outputs == NULL ? -3 : i;
fail:
    Py_XDECREF(items);
    return result;
}

/*
 * cells(buffer, pos, limit, base) -> (spans, stop, closed)
 *
 * The cells of a notebook's "cells" array from buffer[pos] (the start of a
 * cell) on, while each is whole in the buffer, with its separator: spans
 * holds (start, end, outputs) for each (outputs as cell_at makes it), all
 * offsets plus base. closed is True when the array's closing bracket was
 * met (stop is just after it); False when the buffer ends first (stop is
 * the start of the cell to read from a longer one); None when the Python
 * walk must read the cell at stop (it then says what is wrong, if anything).
 */
static PyObject *
cells(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, base;
    long limit;
    if (!PyArg_ParseTuple(args, "y*nln:cells", &view, &pos, &limit, &base))
        return NULL;
    const unsigned char *b = view.buf;
    Py_ssize_t n = view.len;
    PyObject *spans = PyList_New(0);
    PyObject *closed = Py_False;
    if (spans == NULL)
        goto fail;
    while (pos >= 0 && pos < n) {
        PyObject *outputs;
        Py_ssize_t end = cell_at(b, n, pos, limit, base, &outputs);
        if (end == -3)
            goto fail;
        if (end == -1)
            break;
        if (end == -2) {
            closed = Py_None;
            break;
        }
        Py_ssize_t next = after_item(b, n, end, ']');
        if (next == -1 || next == -2) {
            Py_DECREF(outputs);
            if (next == -2)
                closed = Py_None;
            break;
        }
        PyObject *span = Py_BuildValue("(nnN)", base + pos, base + end, outputs);
        if (span == NULL || PyList_Append(spans, span) < 0) {
            Py_XDECREF(span);
            goto fail;
        }
        Py_DECREF(span);
        if (next < 0) {
            pos = -(next + 2);
            closed = Py_True;
            break;
        }
        pos = next;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(NnO)", spans, base + pos, closed);
fail:
    Py_XDECREF(spans);
    PyBuffer_Release(&view);
    return NULL;
}

static PyObject *
value_end(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, end;
    long limit;
    if (!PyArg_ParseTuple(args, "y*nl:value_end", &view, &pos, &limit))
        return NULL;
    end = pos < 0 ? -2 : value_at(view.buf, view.len, pos, limit);
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(end);
}

/*
 * The walk of a string or container from b[i], carried across windows:
 * depth is the nesting so far (0 before the value's first byte), *state
 * bit 1 "inside a string", bit 2 "the byte before was an escaping
 * backslash". Every byte is looked at once: a string by memchr to its next
 * quote and backslash (each found once: the quote is kept while it lies
 * ahead), a container by the stops table. The end is where value_at finds
 * it: a backslash escapes the byte after it, so a quote after an even run
 * of backslashes ends the string, as string_end decides looking back.
 * Returns the index after the value; -1 at the buffer's end (*depth and
 * *state say where the walk is); -2 where value_at gives -2.
 */
static Py_ssize_t
resume_at(const unsigned char *b, Py_ssize_t n, Py_ssize_t i, long limit, long *depth_io, int *state_io)
{
    long depth = *depth_io;
    int state = *state_io;
    Py_ssize_t quote = -1; /* the next quote at or after i, inside a string, once found */
    while (i < n) {
        if (state & 2) { /* the escaped byte */
            state &= ~2;
            i++;
            continue;
        }
        if (state & 1) {
            if (quote < i) {
                const unsigned char *q = memchr(b + i, '"', (size_t)(n - i));
                quote = q == NULL ? n : q - b;
            }
            const unsigned char *bs = memchr(b + i, '\\', (size_t)(quote - i));
            if (bs != NULL) { /* an escape before the quote: pass it and the byte it escapes */
                i = bs - b + 1;
                state |= 2;
                continue;
            }
            if (quote == n) { /* the string runs past the buffer */
                i = n;
                break;
            }
            i = quote + 1;
            state &= ~1;
            if (depth == 0) {
                *depth_io = depth;
                *state_io = state;
                return i;
            }
            continue;
        }
        unsigned char c = b[i];
        if (!stops[c]) {
            if (depth == 0) /* not a string or container: value_at's to pass */
                return -2;
            i++;
            continue;
        }
        i++;
        if (c == '"') {
            state |= 1;
            continue;
        }
        depth += (c == '[' || c == '{') ? 1 : -1;
        if (depth == 0) {
            *depth_io = depth;
            *state_io = state;
            return i;
        }
        if (depth < 0 || depth > limit)
            return -2;
    }
    *depth_io = depth;
    *state_io = state;
    return -1;
}

static PyObject *
resume(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, end;
    long limit, depth;
    int state;
    if (!PyArg_ParseTuple(args, "y*nlli:resume", &view, &pos, &limit, &depth, &state))
        return NULL;
    end = pos < 0 || pos > view.len ? -2 : resume_at(view.buf, view.len, pos, limit, &depth, &state);
    PyBuffer_Release(&view);
    return Py_BuildValue("(nli)", end, depth, state);
}

static PyMethodDef methods[] = {
    {"value_end", value_end, METH_VARARGS,
     "value_end(buffer, pos, limit) -> the index after the JSON value at pos; -1: past the buffer; -2: the walk decides."},
    {"cells", cells, METH_VARARGS,
     "cells(buffer, pos, limit, base) -> (spans, stop, closed): the whole cells from pos on."},
    {"resume", resume, METH_VARARGS,
     "resume(buffer, pos, limit, depth, state) -> (end, depth, state): a string or container walked across windows; end -1: go on in the next."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_nbwalk",
    "The offset index's walk, in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__nbwalk(void)
{
    stops['"'] = stops['['] = stops[']'] = stops['{'] = stops['}'] = 1;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyObject *all = Py_BuildValue("(sss)", "cells", "resume", "value_end");
    if (all == NULL || PyModule_AddObject(m, "__all__", all) < 0) {
        Py_XDECREF(all);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
