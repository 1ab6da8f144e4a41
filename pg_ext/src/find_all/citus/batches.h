/*
 * batches.h — how rows and pairs travel between the nodes of a Citus
 * cluster for simhash_find_all_distributed() and
 * simhash_clusters_distributed() (batches.c; docs/citus.md).  Layer: the
 * bottom of citus/, on the engine and the reading below it.
 *
 * The single-node search (find_all.h) groups its tables into passes by
 * their lowest block, and each pass needs at once only the entries that
 * share its block's bits.  Each row is therefore sent once per pass, to the
 * bucket that the bits of the pass's block hash to, and each bucket searches
 * that pass's tables over the rows it received: the same work as one node,
 * tables and units alike, spread over the buckets.  A pair is reported from
 * the first table it agrees on, which belongs to one pass, whose block both
 * agree on, so the pair sits in one bucket: exactly once over the cluster.
 *
 * The rows travel as batches, a bytea of entries per "part", part = bucket
 * * passes + pass, in Citus's intermediate results (results.h).  Their bytes
 * are most of the cost of the move (each is written to a file, sent,
 * written again, read), so an entry is its hash (8 bytes, network order)
 * and its key as the difference from the batch's previous key (a zigzag
 * varint): ids read in order differ by little, and an entry takes 10 or 11
 * bytes instead of 16.
 */
#ifndef SIMHASH_CITUS_BATCHES_H
#define SIMHASH_CITUS_BATCHES_H

#include "simhash.h"

#include "port/pg_bswap.h"

#include "find_all/find_all.h"
#include "find_all/find_all_result.h"
#include "find_all/find_all_row_buffer.h"

/* splitmix64's finalizer: spreads any set of keys over shards or buckets. */
static inline uint64
simhash_mix64(uint64 x)
{
	x ^= x >> 30;
	x *= UINT64CONST(0xBF58476D1CE4E5B9);
	x ^= x >> 27;
	x *= UINT64CONST(0x94D049BB133111EB);
	return x ^ (x >> 31);
}

/* Reads the entry at in (before end), after the key *last_key; returns its end, NULL if cut short. */
static inline const char *
simhash_decode_entry(const char *in, const char *end, SimhashEntry *entry, uint64 *last_key)
{
	uint64		wire;
	uint64		zigzag = 0;
	int			shift = 0;
	uint8		byte;

	if (end - in < (ptrdiff_t) sizeof(wire) + 1)
		return NULL;
	memcpy(&wire, in, sizeof(wire));
	in += sizeof(wire);
	do
	{
		if (in == end || shift > 63)
			return NULL;
		byte = (uint8) *in++;
		zigzag |= (uint64) (byte & 0x7F) << shift;
		shift += 7;
	} while (byte & 0x80);
	entry->hash = pg_ntoh64(wire);
	entry->key = *last_key + ((zigzag >> 1) ^ (~(zigzag & 1) + 1));
	*last_key = entry->key;
	return in;
}

/*
 * The search for pairs within k bits over `rows` rows in all, for entries
 * [0..n): the layout simhash_find_all would choose for that many rows, and
 * its passes (search->npasses, each cut by search->pass_mask[pass]).  Every
 * source and bucket of a run derives the same from the same arguments.
 */
extern void simhash_citus_passes(int k, int64 rows, SimhashSearch *search, SimhashStripes *stripes,
								 SimhashEntry *entries, Size n, SimhashPairFn emit, void *arg);

/* ERROR unless buckets is a usable number of buckets for passes passes. */
extern void simhash_check_buckets(int buckets, int npasses);

/*
 * A batch being filled.  Its entries start SIMHASH_BATCH_PREFIX_BYTES into
 * the buffer, so that whichever header it goes out with (a bytea's, or a
 * row's in a COPY file) is written just before them, with no copy.
 */
#define SIMHASH_BATCH_PREFIX_BYTES 16
typedef struct SimhashBatch
{
	char	   *buffer;			/* allocated when first used */
	char	   *end;			/* where the next entry goes */
	int			count;
	uint64		last_key;
} SimhashBatch;

/* A source's rows on their way out, a batch at a time. */
typedef struct SimhashScatter
{
	MemoryContext context;		/* where the batches live */
	SimhashSearch passes;
	uint64		salt[SIMHASH_MAX_BLOCKS];	/* per pass */
	int			buckets;
	int			nparts;
	int			batch_rows;
	SimhashBatch *batches;		/* per part */
	/* the rows read, a chunk at a time: from memory, or once spilled from their file */
	SimhashRows input;
	int			chunk;			/* the next chunk in memory */
	SimhashEntry *rows;			/* the current chunk */
	Size		nrows;
	Size		row;			/* the row being sent */
	int			pass;			/* and the next of its passes */
	int			flushed;		/* once every row is sent: the parts put so far */
} SimhashScatter;

/* Reads the (id, fingerprint) rows of sql for a run within k bits over `rows` rows in buckets. */
extern void simhash_scatter_init(SimhashScatter *scatter, text *sql, Oid fingerprint_type, int k,
								 int64 rows, int buckets);

/*
 * Sends rows into the batches until one is full, then every batch left:
 * the part whose batch is to go out (then simhash_scatter_sent()), or -1
 * when all rows are out.
 */
extern int	simhash_scatter_next(SimhashScatter *scatter);

/* The batch has gone out: it is empty again. */
extern void simhash_scatter_sent(SimhashScatter *scatter, int part);

/* Rows read (for the spilled ones, their file) are done with. */
extern void simhash_scatter_end(SimhashScatter *scatter);

/* The entries of a part's batch: [batch->buffer + SIMHASH_BATCH_PREFIX_BYTES, batch->end). */
static inline uint32
simhash_batch_bytes(const SimhashBatch *batch)
{
	return (uint32) (batch->end - batch->buffer - SIMHASH_BATCH_PREFIX_BYTES);
}

/*
 * The pairs (or edges) of a bucket go back packed too, a bytea of (id1,
 * id2, distance) per few thousand, 17 bytes each in network order
 * (simhash_unpack_pairs): a row of Citus's results each would cost the
 * coordinator more than the search costs the workers.
 */
#define SIMHASH_PAIR_BYTES (2 * sizeof(uint64) + 1)
#define SIMHASH_PAIRS_PER_BATCH 3072

typedef struct SimhashPairBatches
{
	SimhashResultSink sink;		/* a row (pairs, batch) per batch */
	bytea	   *batch;
	int			count;
	uint64		pairs;
} SimhashPairBatches;

/* The result of fcinfo's function, a row (pairs, batch) per batch. */
extern void simhash_pairs_init(FunctionCallInfo fcinfo, SimhashPairBatches *out);

/* The batch as a row (pairs, batch). */
extern void simhash_pairs_flush(SimhashPairBatches *out);

/* A pair into the batch, which goes out when full. */
static inline void
simhash_pairs_put(SimhashPairBatches *out, int64 id1, int64 id2, int distance)
{
	char	   *at = VARDATA(out->batch) + out->count * SIMHASH_PAIR_BYTES;
	uint64		wire[2] = {pg_hton64((uint64) id1), pg_hton64((uint64) id2)};

	memcpy(at, wire, sizeof(wire));
	at[sizeof(wire)] = (char) distance;
	out->pairs++;
	if (++out->count == SIMHASH_PAIRS_PER_BATCH)
		simhash_pairs_flush(out);
}

/* The pairs of a batch (bytea) into the result. */
extern void simhash_pairs_unpack(const bytea *batch, SimhashResultSink *sink);

#endif							/* SIMHASH_CITUS_BATCHES_H */
