/*
 * _core.c — the module pysimhash_sql._simhash_core: the fingerprint core
 * (pg_ext/src/core, the same files the extension compiles) for Python.
 * hashing.py's compiled implementation calls it; the pure-Python one is the
 * reference it is tested against.
 *
 * A text is a str (its UTF-8, PyUnicode_AsUTF8AndSize: a lone surrogate is
 * UnicodeEncodeError, as in the pure-Python code) or bytes (used as they
 * are); the GIL is released while the core computes, and the core's memory
 * is PyMem_RawMalloc's (callable without the GIL).  The vector code's level
 * is the best this CPU runs, at most what the environment variable
 * PYSIMHASH_SQL_SIMD says when the module is imported (auto, avx2, none: the
 * tests run every copy).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "core/text.h"

static void *
raw_alloc(size_t size)
{
	return PyMem_RawMalloc(size);
}

static void *
raw_realloc(void *pointer, size_t size)
{
	return PyMem_RawRealloc(pointer, size);
}

/* A status of the core other than SIMHASH_OK as a Python exception; NULL. */
static PyObject *
status_error(SimhashStatus status)
{
	switch (status)
	{
		case SIMHASH_NO_MEMORY:
			return PyErr_NoMemory();
		case SIMHASH_BAD_SHINGLE_SIZE:
			PyErr_SetString(PyExc_ValueError, "shingle_size must be at least 1");
			return NULL;
		case SIMHASH_BAD_WEIGHT:
			PyErr_SetString(PyExc_ValueError, "weights must be finite (no NaN or infinity)");
			return NULL;
		case SIMHASH_OK:
			break;
	}
	PyErr_Format(PyExc_SystemError, "unexpected status %d of the fingerprint core", (int) status);
	return NULL;
}

/* The bytes of a text: a str's UTF-8, or bytes as they are; -1 with an exception else. */
static int
text_bytes(PyObject *text, const char **data, Py_ssize_t *len)
{
	if (PyUnicode_Check(text))
	{
		*data = PyUnicode_AsUTF8AndSize(text, len);
		return *data == NULL ? -1 : 0;
	}
	if (PyBytes_Check(text))
	{
		*data = PyBytes_AS_STRING(text);
		*len = PyBytes_GET_SIZE(text);
		return 0;
	}
	PyErr_Format(PyExc_TypeError, "expected str or bytes, not %.200s", Py_TYPE(text)->tp_name);
	return -1;
}

/* One fingerprint, spec version 1 (shingles of shingle_size tokens) or 2. */
static SimhashStatus
fingerprint_of(const char *data, Py_ssize_t len, int version, int64_t shingle_size, uint64_t *result)
{
	if (version == 1)
		return text_v1_fingerprint(data, (size_t) len, shingle_size, result);
	return text_v2_fingerprint(data, (size_t) len, result);
}

static int
check_version(int version)
{
	if (version == 1 || version == 2)
		return 0;
	PyErr_Format(PyExc_ValueError, "no text spec version %d (1 or 2)", version);
	return -1;
}

PyDoc_STRVAR(fingerprint_doc,
			 "fingerprint(text, version, shingle_size=3) -> int\n\n"
			 "The fingerprint of a str or bytes under text spec version 1 (shingles of\n"
			 "shingle_size tokens) or 2, as an unsigned int; the GIL released meanwhile.");

static PyObject *
fingerprint(PyObject *module, PyObject *args)
{
	PyObject   *text;
	int			version;
	long long	shingle_size = 3;
	const char *data;
	Py_ssize_t	len;
	uint64_t	result = 0;
	SimhashStatus status;

	if (!PyArg_ParseTuple(args, "Oi|L:fingerprint", &text, &version, &shingle_size))
		return NULL;
	if (check_version(version) < 0 || text_bytes(text, &data, &len) < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	status = fingerprint_of(data, len, version, shingle_size, &result);
	Py_END_ALLOW_THREADS
	if (status != SIMHASH_OK)
		return status_error(status);
	return PyLong_FromUnsignedLongLong(result);
}

PyDoc_STRVAR(fingerprints_doc,
			 "fingerprints(texts, version, shingle_size=3) -> list[int]\n\n"
			 "fingerprint() of each text of a sequence, in order, the GIL released once\n"
			 "for all of them (each is made UTF-8 first).");

static PyObject *
fingerprints(PyObject *module, PyObject *args)
{
	PyObject   *sequence;
	PyObject   *texts;
	int			version;
	long long	shingle_size = 3;
	Py_ssize_t	n;
	const char **data = NULL;
	Py_ssize_t *lens = NULL;
	uint64_t   *results = NULL;
	SimhashStatus status = SIMHASH_OK;
	PyObject   *out = NULL;

	if (!PyArg_ParseTuple(args, "Oi|L:fingerprints", &sequence, &version, &shingle_size))
		return NULL;
	if (check_version(version) < 0)
		return NULL;
	/* A tuple of its own: the texts stay alive whatever other threads do to a list meanwhile. */
	texts = PySequence_Tuple(sequence);
	if (texts == NULL)
		return NULL;
	n = PyTuple_GET_SIZE(texts);
	data = PyMem_New(const char *, n);
	lens = PyMem_New(Py_ssize_t, n);
	results = PyMem_New(uint64_t, n);
	if (data == NULL || lens == NULL || results == NULL)
	{
		PyErr_NoMemory();
		goto done;
	}
	for (Py_ssize_t i = 0; i < n; i++)
		if (text_bytes(PyTuple_GET_ITEM(texts, i), &data[i], &lens[i]) < 0)
			goto done;
	Py_BEGIN_ALLOW_THREADS
	for (Py_ssize_t i = 0; i < n && status == SIMHASH_OK; i++)
		status = fingerprint_of(data[i], lens[i], version, shingle_size, &results[i]);
	Py_END_ALLOW_THREADS
	if (status != SIMHASH_OK)
	{
		status_error(status);
		goto done;
	}
	out = PyList_New(n);
	for (Py_ssize_t i = 0; out != NULL && i < n; i++)
	{
		PyObject   *value = PyLong_FromUnsignedLongLong(results[i]);

		if (value == NULL)
			Py_CLEAR(out);
		else
			PyList_SET_ITEM(out, i, value);
	}
done:
	PyMem_Free(data);
	PyMem_Free(lens);
	PyMem_Free(results);
	Py_DECREF(texts);
	return out;
}

PyDoc_STRVAR(vote_doc,
			 "vote(hashes) -> int\n\n"
			 "The vote (spec section 1) of the 64-bit hashes in a C-contiguous buffer of\n"
			 "8-byte items (a numpy uint64 array), the GIL released meanwhile.");

static PyObject *
vote(PyObject *module, PyObject *arg)
{
	Py_buffer	view;
	uint64_t	result;

	if (PyObject_GetBuffer(arg, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
		return NULL;
	if (view.itemsize != sizeof(uint64_t))
	{
		PyBuffer_Release(&view);
		PyErr_SetString(PyExc_TypeError, "vote() takes a buffer of 8-byte hashes");
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	result = hashes_fingerprint((const uint64_t *) view.buf, (size_t) (view.len / sizeof(uint64_t)));
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&view);
	return PyLong_FromUnsignedLongLong(result);
}

static PyMethodDef methods[] = {
	{"fingerprint", fingerprint, METH_VARARGS, fingerprint_doc},
	{"fingerprints", fingerprints, METH_VARARGS, fingerprints_doc},
	{"vote", vote, METH_O, vote_doc},
	{NULL, NULL, 0, NULL},
};

static const char *const level_names[] = {"none", "avx2", "avx512"};

/* The vector code's level: the CPU's best, at most PYSIMHASH_SQL_SIMD's (auto: no cap). */
static int
set_simd_level(void)
{
	const char *cap = getenv("PYSIMHASH_SQL_SIMD");
	SimdLevel	level = simhash_simd_cpu_level();

	if (cap != NULL && *cap != '\0' && strcmp(cap, "auto") != 0)
	{
		SimdLevel	most = SIMD_AVX512;

		if (strcmp(cap, "none") == 0)
			most = SIMD_PLAIN;
		else if (strcmp(cap, "avx2") == 0)
			most = SIMD_AVX2;
		else if (strcmp(cap, "avx512") != 0)
		{
			PyErr_Format(PyExc_ValueError,
						 "PYSIMHASH_SQL_SIMD must be auto, avx512, avx2 or none, not %.100s", cap);
			return -1;
		}
		level = SH_MIN(level, most);
	}
	simhash_simd_level = level;
	return 0;
}

static int
module_exec(PyObject *module)
{
	static const SimhashCoreHost host = {raw_alloc, raw_realloc, PyMem_RawFree, NULL};

	if (set_simd_level() < 0)
		return -1;
	simhash_core_init(&host);
	if (PyModule_AddStringConstant(module, "SIMD_LEVEL", level_names[simhash_simd_level]) < 0 ||
		PyModule_AddStringConstant(module, "CPU_SIMD_LEVEL", level_names[simhash_simd_cpu_level()]) < 0)
		return -1;
	return 0;
}

static PyModuleDef_Slot slots[] = {
	{Py_mod_exec, module_exec},
	{0, NULL},
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "pysimhash_sql._simhash_core",
	.m_doc = "The fingerprint core of pg_ext/src/core, compiled for Python (hashing.py uses it).",
	.m_size = 0,
	.m_methods = methods,
	.m_slots = slots,
};

PyMODINIT_FUNC
PyInit__simhash_core(void)
{
	return PyModuleDef_Init(&module_def);
}
