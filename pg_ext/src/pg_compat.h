/*
 * pg_compat.h — every difference between the PostgreSQL majors we support
 * (14 to 18), in one place.  Source files include simhash.h, which includes
 * this; no other file tests PG_VERSION_NUM.
 *
 * The build fails on any warning in the tests and CI (scripts/build-extension.sh,
 * SIMHASH_WERROR=1), so a header that moves in a new major shows up here as
 * a compile error, not in users' servers as an undefined symbol.
 */
#ifndef SIMHASH_PG_COMPAT_H
#define SIMHASH_PG_COMPAT_H

#include "postgres.h"

#if PG_VERSION_NUM < 140000
#error "simhash needs PostgreSQL 14 or later"
#endif

/*
 * PostgreSQL 16 moved the varlena macros (VARDATA, SET_VARSIZE, ...) out of
 * postgres.h into varatt.h.  Without this include a 16+ build only warns of an
 * implicit declaration, and the library then fails to load.
 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * Report a bad input value.  From PostgreSQL 16 on, input functions report
 * "soft" errors through fcinfo->context, so pg_input_is_valid() and COPY's
 * ON_ERROR work; before 16 every input error is an ERROR.
 */
#if PG_VERSION_NUM >= 160000
#define simhash_input_error(fcinfo, ...) \
	ereturn((fcinfo)->context, (Datum) 0, __VA_ARGS__)
#else
#define simhash_input_error(fcinfo, ...) \
	do { ereport(ERROR, __VA_ARGS__); pg_unreachable(); } while (0)
#endif

/* PostgreSQL 18 tells vacuum_delay_point whether ANALYZE calls it. */
#if PG_VERSION_NUM >= 180000
#define simhash_vacuum_delay_point() vacuum_delay_point(false)
#else
#define simhash_vacuum_delay_point() vacuum_delay_point()
#endif

/*
 * Whether a role owns a table: PostgreSQL 16 made the ownership checks one
 * function for every catalog (utils/acl.h, catalog/pg_class.h).
 */
#if PG_VERSION_NUM >= 160000
#define simhash_owns_table(relid, roleid) object_ownercheck(RelationRelationId, (relid), (roleid))
#else
#define simhash_owns_table(relid, roleid) pg_class_ownercheck((relid), (roleid))
#endif

/*
 * Reading a temporary file (storage/buffile.h): PostgreSQL 16 added
 * BufFileReadExact, which raises the ERROR on a short read itself.
 */
#if PG_VERSION_NUM >= 160000
#define simhash_buffile_read(file, ptr, size) BufFileReadExact((file), (ptr), (size))
#else
#define simhash_buffile_read(file, ptr, size) \
	do { \
		if (BufFileRead((file), (ptr), (size)) != (size)) \
			ereport(ERROR, \
					errcode_for_file_access(), \
					errmsg("could not read from a temporary file: %m")); \
	} while (0)
#endif

/* The next datum of a sort, forward (PostgreSQL 16 added "copy"). */
#if PG_VERSION_NUM >= 160000
#define simhash_tuplesort_getdatum(state, value, isnull) \
	tuplesort_getdatum((state), true, false, (value), (isnull), NULL)
#else
#define simhash_tuplesort_getdatum(state, value, isnull) \
	tuplesort_getdatum((state), true, (value), (isnull), NULL)
#endif

/*
 * Temporary files shared by a parallel run's processes (storage/buffile.h):
 * PostgreSQL 15 moved them from a SharedFileSet to the FileSet inside it.
 */
#if PG_VERSION_NUM >= 150000
#define simhash_shared_file_create(sfs, name) BufFileCreateFileSet(&(sfs)->fs, (name))
#define simhash_shared_file_export(file) BufFileExportFileSet(file)
#define simhash_shared_file_open(sfs, name) BufFileOpenFileSet(&(sfs)->fs, (name), O_RDONLY, false)
#define simhash_shared_file_delete(sfs, name) BufFileDeleteFileSet(&(sfs)->fs, (name), false)
#else
#define simhash_shared_file_create(sfs, name) BufFileCreateShared((sfs), (name))
#define simhash_shared_file_export(file) BufFileExportShared(file)
#define simhash_shared_file_open(sfs, name) BufFileOpenShared((sfs), (name), O_RDONLY)
#define simhash_shared_file_delete(sfs, name) BufFileDeleteShared((sfs), (name))
#endif

/*
 * Pin a relation's block through the buffer it was last seen in, skipping the
 * buffer mapping lookup (false when the buffer holds another page now):
 * PostgreSQL 16 renamed the relation's RelFileNode to RelFileLocator.
 */
#if PG_VERSION_NUM >= 160000
#define simhash_read_recent_buffer(rel, blkno, buffer) \
	ReadRecentBuffer((rel)->rd_locator, MAIN_FORKNUM, (blkno), (buffer))
#else
#define simhash_read_recent_buffer(rel, blkno, buffer) \
	ReadRecentBuffer((rel)->rd_node, MAIN_FORKNUM, (blkno), (buffer))
#endif

/*
 * The subtransaction that first gave a relation new storage in this
 * transaction (TRUNCATE, REINDEX), or InvalidSubTransactionId: PostgreSQL 16
 * renamed the relation's RelFileNode to RelFileLocator.
 */
#if PG_VERSION_NUM >= 160000
#define simhash_new_storage_subid(rel) ((rel)->rd_firstRelfilelocatorSubid)
#else
#define simhash_new_storage_subid(rel) ((rel)->rd_firstRelfilenodeSubid)
#endif

/*
 * Parallel index builds of an access method of our own.  PostgreSQL 17 added
 * amcanbuildparallel: index_build then asks the planner for the workers
 * (plan_create_index_workers: max_parallel_maintenance_workers, the table's
 * size and parallel_workers, parallel safety) and passes the number in
 * ii_ParallelWorkers.  Before 17 index_build asks only for btree, so ambuild
 * asks the planner itself, as index_build would (never in bootstrap or
 * single-user processing).
 */
#if PG_VERSION_NUM >= 170000
#define simhash_am_builds_in_parallel(am) ((am)->amcanbuildparallel = true)
#define simhash_index_build_workers(heap, index, info) ((info)->ii_ParallelWorkers)
#else
#define simhash_am_builds_in_parallel(am) ((void) (am))
#define simhash_index_build_workers(heap, index, info) \
	(IsNormalProcessingMode() ? \
	 plan_create_index_workers(RelationGetRelid(heap), RelationGetRelid(index)) : 0)
#endif

/*
 * The privileges a query's range table needs, checked as ExecutorStart
 * checks them (an ERROR if one is missing): PostgreSQL 16 moved them from
 * the range table entries to RTEPermissionInfos (executor/executor.h).
 */
#if PG_VERSION_NUM >= 160000
#define simhash_check_query_permissions(query) \
	((void) ExecCheckPermissions((query)->rtable, (query)->rteperminfos, true))
#else
#define simhash_check_query_permissions(query) ((void) ExecCheckRTPerms((query)->rtable, true))
#endif

/* The query id a parallel worker reports as its leader's: PostgreSQL 18 made it signed. */
#if PG_VERSION_NUM >= 180000
typedef int64 simhash_query_id;
#else
typedef uint64 simhash_query_id;
#endif

/*
 * A function that never returns (it raises an ERROR), written before the
 * declaration: PostgreSQL 18 spells it pg_noreturn (C11's _Noreturn), the
 * older majors pg_attribute_noreturn() (GCC's attribute, which may lead too).
 */
#if PG_VERSION_NUM >= 180000
#define simhash_noreturn pg_noreturn
#else
#define simhash_noreturn pg_attribute_noreturn()
#endif

/*
 * Keeps the planner from a path whatever its cost (an index path that
 * cannot answer its query): an infinite cost does before PostgreSQL 18,
 * which compares paths' disabled nodes before their costs.
 */
#if PG_VERSION_NUM >= 180000
#define simhash_disable_path(path) ((path)->disabled_nodes = 2)
#else
#define simhash_disable_path(path) ((void) (path))
#endif

#endif							/* SIMHASH_PG_COMPAT_H */
