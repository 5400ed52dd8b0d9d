/* repogym._cjunit: the JUnit reader of repogym/junit.py, with expat's callbacks in C.
 *
 * repogym/junit.py's _Reader is the definition; this is the same state machine, case for
 * case, without a Python call per XML element. It drives the expat that CPython's pyexpat
 * is linked with, through pyexpat's C API capsule, so the build needs no expat headers and
 * the two readers cannot disagree on XML. The few rare steps (a blank `message` attribute,
 * the first line of a failure's text) call back into the Python helpers the pure reader
 * uses, so their rules live in one place.
 *
 * A report with a DOCTYPE is refused, as in the pure reader; expat >= 2.4.1 is required
 * (its amplification limits bound the rest of the chunk being parsed after the refusal,
 * since the capsule offers no way to stop the parser).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* The expat types pyexpat.h refers to. Only pointers and ints cross this boundary, so
 * these stand-ins have the same layout as expat's own declarations. */
typedef char XML_Char;
typedef char XML_LChar;
typedef struct XML_ParserStruct *XML_Parser;
typedef unsigned long XML_Size;
enum XML_Status { XML_STATUS_ERROR = 0, XML_STATUS_OK = 1 };
enum XML_Error { XML_ERROR_NONE = 0 };
typedef struct XML_Memory_Handling_Suite XML_Memory_Handling_Suite;
typedef struct XML_Encoding XML_Encoding;
typedef void (*XML_StartElementHandler)(void *, const XML_Char *, const XML_Char **);
typedef void (*XML_EndElementHandler)(void *, const XML_Char *);
typedef void (*XML_CharacterDataHandler)(void *, const XML_Char *, int);
typedef void (*XML_CommentHandler)(void *, const XML_Char *);
typedef void (*XML_DefaultHandler)(void *, const XML_Char *, int);
typedef void (*XML_StartNamespaceDeclHandler)(void *, const XML_Char *, const XML_Char *);
typedef void (*XML_EndNamespaceDeclHandler)(void *, const XML_Char *);
typedef void (*XML_ProcessingInstructionHandler)(void *, const XML_Char *, const XML_Char *);
typedef int (*XML_UnknownEncodingHandler)(void *, const XML_Char *, XML_Encoding *);
typedef void (*XML_StartDoctypeDeclHandler)(void *, const XML_Char *, const XML_Char *,
                                            const XML_Char *, int);
#include "pyexpat.h"

static struct PyExpat_CAPI *expat;
static PyObject *ParseError;

/* Flush collected text to the Python FirstLine once this much is pending. */
#define TEXT_FLUSH 8192

enum { PASSED, SKIPPED, FAILED, ERRORED };

typedef struct {
    PyObject_HEAD
    XML_Parser parser;
    PyTypeObject *case_type;   /* repogym.junit.Case */
    PyObject *outcomes[4];     /* Outcome.PASSED, SKIPPED, FAILED, ERROR */
    PyObject *first_line_type; /* repogym.junit.FirstLine */
    PyObject *attribute_message;
    PyObject *empty;           /* "" */
    PyObject *ready;           /* list of the cases completed since the last feed */
    PyObject *suites;          /* tuple of the open <testsuite> names */
    PyObject *suite_files;     /* list: the `file` of each open suite, [None] at the root */
    /* The open <testcase>. */
    int in_case;
    Py_ssize_t inner;          /* depth inside it */
    PyObject *name, *classname, *file; /* file may be NULL */
    PyObject *line;            /* its `line` attribute, NULL when it has none */
    int severity;              /* 0 passed, then the index into outcomes */
    int flaky;
    PyObject *message;
    /* The deciding child's text while it is collected. */
    PyObject *text;            /* a FirstLine, or NULL */
    int text_full;
    char *pending;
    size_t pending_len, pending_cap;
    /* Why parsing stopped early: a Python error is set, or a DOCTYPE was found. */
    int failed;
    PyObject *doctype;
    unsigned long doctype_line;
} Reader;

static void stop(Reader *r)
{
    /* The capsule has no XML_StopParser: silence the handlers for the rest of the chunk. */
    expat->SetElementHandler(r->parser, NULL, NULL);
    expat->SetCharacterDataHandler(r->parser, NULL);
    expat->SetStartDoctypeDeclHandler(r->parser, NULL);
}

static void fail(Reader *r)
{
    r->failed = 1;
    stop(r);
}

static const char *attribute(const XML_Char **atts, const char *key)
{
    for (; atts[0] != NULL; atts += 2) {
        if (strcmp(atts[0], key) == 0)
            return atts[1];
    }
    return NULL;
}

static PyObject *text_of(Reader *r, const char *value)
{
    if (value == NULL || value[0] == '\0') {
        Py_INCREF(r->empty);
        return r->empty;
    }
    return PyUnicode_DecodeUTF8(value, (Py_ssize_t)strlen(value), "strict");
}

static int severity_of(const char *tag)
{
    switch (tag[0]) {
    case 's': return strcmp(tag, "skipped") == 0 ? SKIPPED : 0;
    case 'f': return strcmp(tag, "failure") == 0 ? FAILED : 0;
    case 'e': return strcmp(tag, "error") == 0 ? ERRORED : 0;
    default: return 0;
    }
}

static int is_rerun(const char *tag)
{
    return strcmp(tag, "flakyFailure") == 0 || strcmp(tag, "flakyError") == 0
           || strcmp(tag, "rerunFailure") == 0 || strcmp(tag, "rerunError") == 0;
}

static int flush_text(Reader *r)
{
    if (r->pending_len == 0 || r->text_full) {
        r->pending_len = 0;
        return 0;
    }
    PyObject *data = PyUnicode_DecodeUTF8(r->pending, (Py_ssize_t)r->pending_len, "strict");
    r->pending_len = 0;
    if (data == NULL)
        return -1;
    PyObject *settled = PyObject_CallMethod(r->text, "add", "O", data);
    Py_DECREF(data);
    if (settled == NULL)
        return -1;
    r->text_full = PyObject_IsTrue(settled);
    Py_DECREF(settled);
    return r->text_full < 0 ? -1 : 0;
}

static void on_text(void *user, const XML_Char *data, int len)
{
    Reader *r = user;
    if (r->text == NULL || r->text_full || len <= 0)
        return;
    size_t need = r->pending_len + (size_t)len;
    if (need > r->pending_cap) {
        size_t cap = need > 2 * r->pending_cap ? need : 2 * r->pending_cap;
        char *grown = PyMem_Realloc(r->pending, cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            fail(r);
            return;
        }
        r->pending = grown;
        r->pending_cap = cap;
    }
    memcpy(r->pending + r->pending_len, data, (size_t)len);
    r->pending_len = need;
    if (r->pending_len >= TEXT_FLUSH && flush_text(r) < 0)
        fail(r);
}

static int verdict(Reader *r, int severity, const XML_Char **atts)
{
    if (severity <= r->severity) /* of several alike, the first one's message is kept */
        return 0;
    r->severity = severity;
    PyObject *written = text_of(r, attribute(atts, "message"));
    if (written == NULL)
        return -1;
    PyObject *message = PyObject_CallOneArg(r->attribute_message, written);
    Py_DECREF(written);
    if (message == NULL)
        return -1;
    if (message != Py_None) {
        Py_SETREF(r->message, message);
        return 0;
    }
    Py_DECREF(message);
    Py_INCREF(r->empty);
    Py_SETREF(r->message, r->empty);
    Py_XSETREF(r->text, PyObject_CallNoArgs(r->first_line_type));
    r->text_full = 0;
    r->pending_len = 0;
    if (r->text == NULL)
        return -1;
    expat->SetCharacterDataHandler(r->parser, on_text);
    return 0;
}

static int open_case(Reader *r, const XML_Char **atts)
{
    const char *file = attribute(atts, "file");
    const char *line = attribute(atts, "line");
    r->in_case = 1;
    /* Each step only once the one before it succeeded: no call with an error set. */
    if ((r->name = text_of(r, attribute(atts, "name"))) == NULL)
        return -1;
    if ((r->classname = text_of(r, attribute(atts, "classname"))) == NULL)
        return -1;
    if (file != NULL && file[0] != '\0' && (r->file = text_of(r, file)) == NULL)
        return -1;
    if (line != NULL && (r->line = text_of(r, line)) == NULL)
        return -1;
    return 0;
}

static int open_suite(Reader *r, const XML_Char **atts)
{
    PyObject *name = text_of(r, attribute(atts, "name"));
    if (name == NULL)
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(r->suites);
    PyObject *suites = PyTuple_New(n + 1);
    if (suites == NULL) {
        Py_DECREF(name);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(r->suites, i);
        Py_INCREF(item);
        PyTuple_SET_ITEM(suites, i, item);
    }
    PyTuple_SET_ITEM(suites, n, name);
    Py_SETREF(r->suites, suites);
    const char *file = attribute(atts, "file");
    PyObject *inherited;
    if (file != NULL && file[0] != '\0') {
        inherited = text_of(r, file);
        if (inherited == NULL)
            return -1;
    } else {
        inherited = PyList_GET_ITEM(r->suite_files, PyList_GET_SIZE(r->suite_files) - 1);
        Py_INCREF(inherited);
    }
    int appended = PyList_Append(r->suite_files, inherited);
    Py_DECREF(inherited);
    return appended;
}

static int close_suite(Reader *r)
{
    Py_ssize_t n = PyTuple_GET_SIZE(r->suites);
    PyObject *suites = PyTuple_GetSlice(r->suites, 0, n > 0 ? n - 1 : 0);
    if (suites == NULL)
        return -1;
    Py_SETREF(r->suites, suites);
    Py_ssize_t files = PyList_GET_SIZE(r->suite_files);
    return files > 1 ? PyList_SetSlice(r->suite_files, files - 1, files, NULL) : 0;
}

static int emit(Reader *r)
{
    PyObject *file = r->file;
    if (file == NULL)
        file = PyList_GET_ITEM(r->suite_files, PyList_GET_SIZE(r->suite_files) - 1);
    /* What tuple.__new__(Case, items) makes, without the call. */
    PyObject *item = r->case_type->tp_alloc(r->case_type, 8);
    if (item == NULL)
        return -1;
    PyObject *fields[8] = {
        r->name, r->classname, file, r->suites, r->outcomes[r->severity],
        r->flaky ? Py_True : Py_False, r->message, r->line != NULL ? r->line : Py_None,
    };
    for (int i = 0; i < 8; i++) {
        Py_INCREF(fields[i]);
        PyTuple_SET_ITEM(item, i, fields[i]);
    }
    int appended = PyList_Append(r->ready, item);
    Py_DECREF(item);
    r->in_case = 0;
    r->severity = 0;
    r->flaky = 0;
    Py_CLEAR(r->name);
    Py_CLEAR(r->classname);
    Py_CLEAR(r->file);
    Py_CLEAR(r->line);
    Py_INCREF(r->empty);
    Py_SETREF(r->message, r->empty);
    return appended;
}

static int stop_text(Reader *r)
{
    int flushed = flush_text(r);
    expat->SetCharacterDataHandler(r->parser, NULL);
    if (flushed < 0) {
        Py_CLEAR(r->text);
        return -1;
    }
    PyObject *line = PyObject_CallMethod(r->text, "line", NULL);
    Py_CLEAR(r->text);
    if (line == NULL)
        return -1;
    Py_SETREF(r->message, line);
    return 0;
}

static void on_start(void *user, const XML_Char *tag, const XML_Char **atts)
{
    Reader *r = user;
    int failed = 0;
    if (r->in_case) {
        r->inner++;
        if (r->inner == 1) { /* only the testcase's own children count */
            int severity = severity_of(tag);
            if (severity)
                failed = verdict(r, severity, atts);
            else if (is_rerun(tag))
                r->flaky = 1;
        }
    } else if (strcmp(tag, "testcase") == 0) {
        failed = open_case(r, atts);
    } else if (strcmp(tag, "testsuite") == 0) {
        failed = open_suite(r, atts);
    }
    if (failed)
        fail(r);
}

static void on_end(void *user, const XML_Char *tag)
{
    Reader *r = user;
    int failed = 0;
    if (r->inner) { /* a child of the open testcase, or deeper */
        r->inner--;
        if (!r->inner && r->text != NULL)
            failed = stop_text(r);
    } else if (r->in_case) {
        failed = emit(r);
    } else if (strcmp(tag, "testsuite") == 0) {
        failed = close_suite(r);
    }
    if (failed)
        fail(r);
}

static void on_doctype(void *user, const XML_Char *name, const XML_Char *sysid,
                       const XML_Char *pubid, int has_internal_subset)
{
    Reader *r = user;
    (void)sysid, (void)pubid, (void)has_internal_subset;
    r->doctype_line = expat->GetErrorLineNumber(r->parser); /* XML_GetCurrentLineNumber */
    r->doctype = text_of(r, name);
    if (r->doctype == NULL)
        fail(r);
    else
        stop(r);
}

static int Reader_init(Reader *r, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"case_type", "outcomes", "first_line", "attribute_message", NULL};
    PyObject *case_type, *outcomes, *first_line, *attribute_message;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!OO:Reader", keywords, &PyType_Type,
                                     &case_type, &PyTuple_Type, &outcomes, &first_line,
                                     &attribute_message))
        return -1;
    if (r->case_type != NULL) { /* set first: a failed __init__ counts too */
        PyErr_SetString(PyExc_RuntimeError, "Reader.__init__ called twice");
        return -1;
    }
    if (!PyType_IsSubtype((PyTypeObject *)case_type, &PyTuple_Type)
        || PyTuple_GET_SIZE(outcomes) != 4) {
        PyErr_SetString(PyExc_TypeError, "case_type must be a tuple type, outcomes 4 items");
        return -1;
    }
    Py_INCREF(case_type);
    r->case_type = (PyTypeObject *)case_type;
    for (int i = 0; i < 4; i++) {
        r->outcomes[i] = PyTuple_GET_ITEM(outcomes, i);
        Py_INCREF(r->outcomes[i]);
    }
    Py_INCREF(first_line);
    r->first_line_type = first_line;
    Py_INCREF(attribute_message);
    r->attribute_message = attribute_message;
    r->empty = PyUnicode_FromStringAndSize("", 0);
    r->ready = PyList_New(0);
    r->suites = PyTuple_New(0);
    r->suite_files = PyList_New(1);
    if (!r->empty || !r->ready || !r->suites || !r->suite_files)
        return -1;
    Py_INCREF(r->empty);
    r->message = r->empty;
    Py_INCREF(Py_None);
    PyList_SET_ITEM(r->suite_files, 0, Py_None);
    r->parser = expat->ParserCreate_MM(NULL, NULL, NULL);
    if (r->parser == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    expat->SetUserData(r->parser, r);
    expat->SetElementHandler(r->parser, on_start, on_end);
    expat->SetStartDoctypeDeclHandler(r->parser, on_doctype);
    /* Encodings expat lacks are decoded with Python's codecs, as pyexpat does. */
    expat->SetUnknownEncodingHandler(r->parser, expat->DefaultUnknownEncodingHandler, NULL);
    return 0;
}

static PyObject *Reader_feed(Reader *r, PyObject *args)
{
    Py_buffer chunk;
    int final;
    if (!PyArg_ParseTuple(args, "y*p:feed", &chunk, &final))
        return NULL;
    if (r->parser == NULL || r->failed || r->doctype != NULL) {
        PyBuffer_Release(&chunk);
        PyErr_SetString(PyExc_RuntimeError, "the reader cannot take more input");
        return NULL;
    }
    if (chunk.len > INT_MAX) {
        PyBuffer_Release(&chunk);
        PyErr_SetString(PyExc_ValueError, "chunk too large");
        return NULL;
    }
    enum XML_Status status = expat->Parse(r->parser, chunk.buf, (int)chunk.len, final);
    PyBuffer_Release(&chunk);
    /* A handler's error, or one pyexpat's encoding handler set (a codec Python lacks, or
     * a multi-byte one): raised as is, as pyexpat's Parse does for the pure reader. */
    if (r->failed || PyErr_Occurred()) {
        r->failed = 1;
        return NULL;
    }
    PyObject *info = NULL;
    if (r->doctype != NULL) {
        info = Py_BuildValue("(sOk)", "dtd", r->doctype, r->doctype_line);
    } else if (status == XML_STATUS_ERROR) {
        enum XML_Error code = expat->GetErrorCode(r->parser);
        info = Py_BuildValue("(sskk)", "syntax", expat->ErrorString(code),
                             (unsigned long)expat->GetErrorLineNumber(r->parser),
                             (unsigned long)expat->GetErrorColumnNumber(r->parser));
    } else {
        PyObject *ready = r->ready;
        r->ready = PyList_New(0);
        if (r->ready == NULL) {
            r->ready = ready;
            return NULL;
        }
        return ready;
    }
    if (info != NULL) {
        /* The tuple becomes the exception's args: (kind, ...). */
        PyErr_SetObject(ParseError, info);
        Py_DECREF(info);
    }
    return NULL;
}

static void Reader_dealloc(Reader *r)
{
    if (r->parser != NULL)
        expat->ParserFree(r->parser);
    Py_XDECREF(r->case_type);
    for (int i = 0; i < 4; i++)
        Py_XDECREF(r->outcomes[i]);
    Py_XDECREF(r->first_line_type);
    Py_XDECREF(r->attribute_message);
    Py_XDECREF(r->empty);
    Py_XDECREF(r->ready);
    Py_XDECREF(r->suites);
    Py_XDECREF(r->suite_files);
    Py_XDECREF(r->name);
    Py_XDECREF(r->classname);
    Py_XDECREF(r->file);
    Py_XDECREF(r->line);
    Py_XDECREF(r->message);
    Py_XDECREF(r->text);
    Py_XDECREF(r->doctype);
    PyMem_Free(r->pending);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyMethodDef Reader_methods[] = {
    {"feed", (PyCFunction)Reader_feed, METH_VARARGS,
     "feed(chunk, final) -> list of the cases completed; raises ParseError(info)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "repogym._cjunit.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Reader(case_type, outcomes, first_line, attribute_message): JUnit XML to cases",
    .tp_methods = Reader_methods,
    .tp_init = (initproc)Reader_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "repogym._cjunit",
    .m_doc = "repogym.junit's reader, in C.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__cjunit(void)
{
    expat = PyCapsule_Import(PyExpat_CAPSULE_NAME, 0);
    if (expat == NULL)
        return NULL;
    if (strcmp(expat->magic, PyExpat_CAPI_MAGIC) != 0
        || (size_t)expat->size < sizeof(struct PyExpat_CAPI)) {
        PyErr_SetString(PyExc_ImportError, "pyexpat's C API is not the one built against");
        return NULL;
    }
    int version = expat->MAJOR_VERSION * 10000 + expat->MINOR_VERSION * 100
                  + expat->MICRO_VERSION;
    if (version < 20401) {
        PyErr_SetString(PyExc_ImportError, "expat 2.4.1 or later is needed");
        return NULL;
    }
    if (PyType_Ready(&ReaderType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    ParseError = PyErr_NewException("repogym._cjunit.ParseError", NULL, NULL);
    if (ParseError == NULL || PyModule_AddObjectRef(m, "ParseError", ParseError) < 0
        || PyModule_AddObjectRef(m, "Reader", (PyObject *)&ReaderType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
