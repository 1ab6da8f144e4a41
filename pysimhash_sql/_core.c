/*
 * _core.c — the module pysimhash_sql._simhash_core: the fingerprint core
 * (pg_ext/src/core, the same files the extension compiles) for Python.
 * hashing.py's compiled implementation calls it; the pure-Python one is the
 * reference it is tested against.
 *
 * A text is a str (its UTF-8: a lone surrogate is UnicodeEncodeError, as in
 * the pure-Python code) or bytes (used as they are).  The GIL is released
 * while the core computes, and while a str that is not ASCII is written as
 * UTF-8 (threads would otherwise take turns at it: a seventh of the time on
 * Chinese); the core's memory is PyMem_RawMalloc's (callable without the GIL).  The vector code's level
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

/*
 * A text as the GIL-free part takes it: UTF-8 bytes where they are at hand
 * (bytes, an ASCII str), else a str's code points (kind: 1, 2 or 4 bytes
 * each), with no lone surrogate: text_utf8 writes their UTF-8 without the GIL.
 */
typedef struct Text
{
	const char *data;			/* UTF-8, or NULL: chars */
	Py_ssize_t	len;			/* bytes of data, or code points of chars */
	int			kind;
	const void *chars;
} Text;

/* Whether code points of this kind hold a surrogate (which UTF-8 cannot encode). */
static bool
has_surrogate(int kind, const void *chars, Py_ssize_t n)
{
	uint32_t	found = 0;

	if (kind == PyUnicode_2BYTE_KIND)
		for (Py_ssize_t i = 0; i < n; i++)
			found |= (uint32_t) (((const Py_UCS2 *) chars)[i] - 0xD800) < 0x800;
	else if (kind == PyUnicode_4BYTE_KIND)
		for (Py_ssize_t i = 0; i < n; i++)
			found |= ((const Py_UCS4 *) chars)[i] - 0xD800 < 0x800;
	return found != 0;
}

/* A str or bytes as a Text (under the GIL); -1 with an exception else. */
static int
text_prepare(PyObject *text, Text *out)
{
	if (PyUnicode_Check(text))
	{
#if PY_VERSION_HEX < 0x030C0000
		if (PyUnicode_READY(text) < 0)
			return -1;
#endif
		if (PyUnicode_IS_ASCII(text))
		{
			out->data = PyUnicode_AsUTF8AndSize(text, &out->len);
			return out->data == NULL ? -1 : 0;
		}
		out->data = NULL;
		out->kind = PyUnicode_KIND(text);
		out->chars = PyUnicode_DATA(text);
		out->len = PyUnicode_GET_LENGTH(text);
		/* A lone surrogate: the same UnicodeEncodeError as str.encode("utf-8"). */
		if (has_surrogate(out->kind, out->chars, out->len))
			return PyUnicode_AsUTF8AndSize(text, NULL) == NULL ? -1 : 0;
		return 0;
	}
	if (PyBytes_Check(text))
	{
		out->data = PyBytes_AS_STRING(text);
		out->len = PyBytes_GET_SIZE(text);
		return 0;
	}
	PyErr_Format(PyExc_TypeError, "expected str or bytes, not %.200s", Py_TYPE(text)->tp_name);
	return -1;
}

/* Writes the UTF-8 of code point c (no surrogate) at *at, advancing it. */
static inline void
put_utf8(uint32_t c, unsigned char **at)
{
	unsigned char *out = *at;

	if (c < 0x80)
		*out++ = (unsigned char) c;
	else if (c < 0x800)
	{
		*out++ = 0xC0 | (c >> 6);
		*out++ = 0x80 | (c & 0x3F);
	}
	else if (c < 0x10000)
	{
		*out++ = 0xE0 | (c >> 12);
		*out++ = 0x80 | ((c >> 6) & 0x3F);
		*out++ = 0x80 | (c & 0x3F);
	}
	else
	{
		*out++ = 0xF0 | (c >> 18);
		*out++ = 0x80 | ((c >> 12) & 0x3F);
		*out++ = 0x80 | ((c >> 6) & 0x3F);
		*out++ = 0x80 | (c & 0x3F);
	}
	*at = out;
}

/*
 * The UTF-8 of n code points of a kind (no surrogate among them) into out:
 * its length.  One loop a kind, so that each reads its own width.
 */
static size_t
utf8_of(int kind, const void *chars, Py_ssize_t n, unsigned char *out)
{
	unsigned char *at = out;

	if (kind == PyUnicode_1BYTE_KIND)
		for (Py_ssize_t i = 0; i < n; i++)
			put_utf8(((const Py_UCS1 *) chars)[i], &at);
	else if (kind == PyUnicode_2BYTE_KIND)
		for (Py_ssize_t i = 0; i < n; i++)
			put_utf8(((const Py_UCS2 *) chars)[i], &at);
	else
		for (Py_ssize_t i = 0; i < n; i++)
			put_utf8(((const Py_UCS4 *) chars)[i], &at);
	return (size_t) (at - out);
}

/* One fingerprint, spec version 1 (shingles of shingle_size tokens), 2 or 3, without the GIL. */
static SimhashStatus
fingerprint_of(const Text *text, int version, int64_t shingle_size, uint64_t *result)
{
	const char *data = text->data;
	size_t		len = (size_t) text->len;
	unsigned char *utf8 = NULL;
	SimhashStatus status;

	if (data == NULL)
	{
		/* At most 2 bytes a code point of kind 1, 3 of kind 2, 4 of kind 4. */
		size_t		most = (size_t) text->len * (text->kind == PyUnicode_1BYTE_KIND ? 2 : text->kind + 1);

		utf8 = PyMem_RawMalloc(most + 1);
		if (utf8 == NULL)
			return SIMHASH_NO_MEMORY;
		len = utf8_of(text->kind, text->chars, text->len, utf8);
		data = (const char *) utf8;
	}
	if (version == 1)
		status = text_v1_fingerprint(data, len, shingle_size, result);
	else if (version == 2)
		status = text_v2_fingerprint(data, len, result);
	else
		status = text_v3_fingerprint(data, len, result);
	PyMem_RawFree(utf8);
	return status;
}

static int
check_version(int version)
{
	if (version >= 1 && version <= 3)
		return 0;
	PyErr_Format(PyExc_ValueError, "no text spec version %d (1, 2 or 3)", version);
	return -1;
}

PyDoc_STRVAR(fingerprint_doc,
			 "fingerprint(text, version, shingle_size=3) -> int\n\n"
			 "The fingerprint of a str or bytes under text spec version 1 (shingles of\n"
			 "shingle_size tokens), 2 or 3, as an unsigned int; the GIL released meanwhile.");

static PyObject *
fingerprint(PyObject *module, PyObject *args)
{
	PyObject   *text;
	int			version;
	long long	shingle_size = 3;
	Text		prepared;
	uint64_t	result = 0;
	SimhashStatus status;

	(void) module;

	if (!PyArg_ParseTuple(args, "Oi|L:fingerprint", &text, &version, &shingle_size))
		return NULL;
	if (check_version(version) < 0 || text_prepare(text, &prepared) < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	status = fingerprint_of(&prepared, version, shingle_size, &result);
	Py_END_ALLOW_THREADS
	if (status != SIMHASH_OK)
		return status_error(status);
	return PyLong_FromUnsignedLongLong(result);
}

PyDoc_STRVAR(fingerprints_doc,
			 "fingerprints(texts, version, shingle_size=3, jobs=1) -> list[int]\n\n"
			 "fingerprint() of each text of a sequence, in order, the GIL released once\n"
			 "for all of them; with jobs > 1, computed by that many threads of its own,\n"
			 "each taking the next texts as it is done with its last.");

/* Bytes of texts a thread of fingerprints() takes at a time (at least one text). */
#define CLAIM_BYTES 65536

/*
 * The work of one call of fingerprints(), shared by its threads: the texts
 * are claimed a few at a time (claim_lock), so that every thread computes
 * until the last text is taken, whatever each text costs; a failure stops
 * the others at their next claim.
 */
typedef struct Batch
{
	const Text *texts;
	uint64_t   *results;
	Py_ssize_t	n;
	int			version;
	int64_t		shingle_size;
	PyThread_type_lock claim_lock;
	Py_ssize_t	next;			/* the first text not yet claimed */
	SimhashStatus status;		/* the first failure, or SIMHASH_OK */
	PyThread_type_lock done_lock;	/* held until the last thread has left */
	long long	threads;		/* threads not yet done with the batch */
} Batch;

/* The next texts of a batch to compute, [*start, *end): false when none is left. */
static bool
batch_claim(Batch *batch, Py_ssize_t *start, Py_ssize_t *end)
{
	size_t		bytes = 0;
	Py_ssize_t	at;

	PyThread_acquire_lock(batch->claim_lock, WAIT_LOCK);
	at = batch->status == SIMHASH_OK ? batch->next : batch->n;
	*start = at;
	while (at < batch->n && bytes < CLAIM_BYTES)
		bytes += (size_t) batch->texts[at++].len + 1;
	batch->next = at;
	PyThread_release_lock(batch->claim_lock);
	*end = at;
	return *start < *end;
}

/* Computes claimed texts until none is left (or one failed), without the GIL. */
static void
batch_compute(Batch *batch)
{
	Py_ssize_t	start,
				end;

	while (batch_claim(batch, &start, &end))
		for (Py_ssize_t i = start; i < end; i++)
		{
			SimhashStatus status = fingerprint_of(&batch->texts[i], batch->version,
												  batch->shingle_size, &batch->results[i]);

			if (status != SIMHASH_OK)
			{
				PyThread_acquire_lock(batch->claim_lock, WAIT_LOCK);
				if (batch->status == SIMHASH_OK)
					batch->status = status;
				PyThread_release_lock(batch->claim_lock);
				break;
			}
		}
}

/* A thread done with a batch: the last one lets batch_run return. */
static void
batch_leave(Batch *batch)
{
	bool		last;

	PyThread_acquire_lock(batch->claim_lock, WAIT_LOCK);
	last = --batch->threads == 0;
	PyThread_release_lock(batch->claim_lock);
	if (last)
		PyThread_release_lock(batch->done_lock);	/* batch is not touched past this */
}

/* A thread of fingerprints() (started without the GIL, never taking it). */
static void
batch_thread(void *arg)
{
	batch_compute(arg);
	batch_leave(arg);
}

/*
 * The texts' fingerprints computed by up to jobs threads of their own (fewer
 * where the texts are fewer), without the GIL, while the calling thread
 * waits: SIMHASH_OK, or the first failure.  The calling thread does not
 * compute beside them: on a busy machine the scheduler then leaves a new
 * thread beside it on its core, both threads sharing one core for the whole
 * call (seen in 7 of 24 calls at load 7, against 1 of 24 with every
 * computing thread new).  It computes alone where no thread can be started.
 */
static SimhashStatus
batch_run(Batch *batch, long long jobs)
{
	long long	threads = SH_MIN(jobs, (long long) batch->n);
	long long	started = 0;

	PyThread_acquire_lock(batch->done_lock, WAIT_LOCK);
	batch->threads = 1;			/* the calling thread's own, until it leaves */
	for (; started < threads; started++)
	{
		PyThread_acquire_lock(batch->claim_lock, WAIT_LOCK);
		batch->threads++;
		PyThread_release_lock(batch->claim_lock);
		if (PyThread_start_new_thread(batch_thread, batch) == PYTHREAD_INVALID_THREAD_ID)
		{
			PyThread_acquire_lock(batch->claim_lock, WAIT_LOCK);
			batch->threads--;
			PyThread_release_lock(batch->claim_lock);
			break;
		}
	}
	if (started == 0)
		batch_compute(batch);
	batch_leave(batch);
	/* Until the last thread has left (done_lock released). */
	PyThread_acquire_lock(batch->done_lock, WAIT_LOCK);
	PyThread_release_lock(batch->done_lock);
	return batch->status;
}

static PyObject *
fingerprints(PyObject *module, PyObject *args)
{
	PyObject   *sequence;
	PyObject   *texts;
	int			version;
	long long	shingle_size = 3;
	long long	jobs = 1;
	Py_ssize_t	n;
	Text	   *prepared = NULL;
	uint64_t   *results = NULL;
	Batch		batch = {0};
	SimhashStatus status;
	PyObject   *out = NULL;

	(void) module;

	if (!PyArg_ParseTuple(args, "Oi|LL:fingerprints", &sequence, &version, &shingle_size, &jobs))
		return NULL;
	if (check_version(version) < 0)
		return NULL;
	if (jobs < 1)
	{
		PyErr_Format(PyExc_ValueError, "jobs must be at least 1, not %lld", jobs);
		return NULL;
	}
	/* A tuple of its own: the texts stay alive whatever other threads do to a list meanwhile. */
	texts = PySequence_Tuple(sequence);
	if (texts == NULL)
		return NULL;
	n = PyTuple_GET_SIZE(texts);
	prepared = PyMem_New(Text, n);
	results = PyMem_New(uint64_t, n);
	if (prepared == NULL || results == NULL)
	{
		PyErr_NoMemory();
		goto done;
	}
	for (Py_ssize_t i = 0; i < n; i++)
		if (text_prepare(PyTuple_GET_ITEM(texts, i), &prepared[i]) < 0)
			goto done;
	batch = (Batch) {.texts = prepared, .results = results, .n = n, .version = version,
		.shingle_size = shingle_size};
	if (jobs > 1 && n > 1)
	{
		batch.claim_lock = PyThread_allocate_lock();
		batch.done_lock = PyThread_allocate_lock();
		if (batch.claim_lock == NULL || batch.done_lock == NULL)
		{
			PyErr_NoMemory();
			goto done;
		}
	}
	else
		jobs = 1;
	Py_BEGIN_ALLOW_THREADS
	if (jobs == 1)
	{
		status = SIMHASH_OK;
		for (Py_ssize_t i = 0; i < n && status == SIMHASH_OK; i++)
			status = fingerprint_of(&prepared[i], version, shingle_size, &results[i]);
	}
	else
		status = batch_run(&batch, jobs);
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
	if (batch.claim_lock != NULL)
		PyThread_free_lock(batch.claim_lock);
	if (batch.done_lock != NULL)
		PyThread_free_lock(batch.done_lock);
	PyMem_Free(prepared);
	PyMem_Free(results);
	Py_DECREF(texts);
	return out;
}

PyDoc_STRVAR(vote_doc,
			 "vote(hashes) -> int\n\n"
			 "The vote (spec section 1) of the 64-bit hashes in a C-contiguous buffer of\n"
			 "8-byte items (a numpy uint64 array), the GIL released meanwhile; or of a\n"
			 "list or tuple of ints in -2**63 .. 2**64-1 (negative: two's complement),\n"
			 "where NotImplemented means an item is another type or out of that range\n"
			 "(the caller's own checks then say which).");

/* Hashes of a list this long or longer are voted without the GIL. */
#define VOTE_UNLOCKED_FROM 4096
/* A list this short is read into the stack. */
#define VOTE_ON_STACK 256

/*
 * item as a 64-bit hash: true, or false when it is not an exact int in
 * -2**63 .. 2**64-1 (no exception left set).
 */
static bool
int_hash(PyObject *item, uint64_t *hash)
{
	unsigned long long value;
	long long	negative;

	if (!PyLong_CheckExact(item))
		return false;
	value = PyLong_AsUnsignedLongLong(item);
	if (value != (unsigned long long) -1 || !PyErr_Occurred())
	{
		*hash = (uint64_t) value;
		return true;
	}
	PyErr_Clear();
	negative = PyLong_AsLongLong(item);
	if (negative == -1 && PyErr_Occurred())
	{
		PyErr_Clear();
		return false;
	}
	*hash = (uint64_t) negative;
	return true;
}

/* vote() of a list or tuple of ints. */
static PyObject *
vote_sequence(PyObject *seq)
{
	Py_ssize_t	n = PySequence_Fast_GET_SIZE(seq);
	PyObject  **items = PySequence_Fast_ITEMS(seq);
	uint64_t	on_stack[VOTE_ON_STACK];
	uint64_t   *hashes = on_stack;
	uint64_t	result;

	if (n > VOTE_ON_STACK && (hashes = PyMem_Malloc((size_t) n * sizeof(uint64_t))) == NULL)
		return PyErr_NoMemory();
	for (Py_ssize_t i = 0; i < n; i++)
	{
		if (!int_hash(items[i], &hashes[i]))
		{
			if (hashes != on_stack)
				PyMem_Free(hashes);
			Py_RETURN_NOTIMPLEMENTED;
		}
	}
	if (n >= VOTE_UNLOCKED_FROM)
	{
		Py_BEGIN_ALLOW_THREADS
		result = hashes_fingerprint(hashes, (size_t) n);
		Py_END_ALLOW_THREADS
	}
	else
		result = hashes_fingerprint(hashes, (size_t) n);
	if (hashes != on_stack)
		PyMem_Free(hashes);
	return PyLong_FromUnsignedLongLong(result);
}

static PyObject *
vote(PyObject *module, PyObject *arg)
{
	Py_buffer	view;
	uint64_t	result;

	(void) module;

	if (PyList_CheckExact(arg) || PyTuple_CheckExact(arg))
		return vote_sequence(arg);
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
	/* No scratch: in a Python process the allocator keeps its memory between texts. */
	static const SimhashCoreHost host = {raw_alloc, raw_realloc, PyMem_RawFree, NULL, NULL, NULL};

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
