/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Block traces for redcapctl simulate: a file of requests (CSV, or the text
 * blkparse prints, or a binary blktrace capture read through blkparse) as
 * one array of requests in issue order, which the replay engine walks.
 *
 * The two formats:
 *
 * csv: a header line "time_ns,pid,op,sector,sectors", then one request a
 *   line: decimal numbers, no spaces, op R (read), W (write) or D (discard),
 *   sectors of 512 bytes, at least 1.  Blank lines and lines starting with
 *   '#' are skipped anywhere.  The lines need not be in time order.
 *
 * blkparse: the default text of "blkparse -i DEV" (no -f/-F), e.g.
 *   "  8,16   1       13     0.000312553  4321  Q   R 2048 + 8 [fio]".
 *   The requests are the Q events (what the processes asked for, before the
 *   block layer merged or split them), each with the pid of its Q line; a
 *   trace without Q events (captured with a mask that leaves them out) uses
 *   its D events instead.  The RWBS field gives the kind: R read, W write,
 *   D discard; events without data (a pure flush, FN/FWS with no sectors,
 *   SCSI pass-through) are skipped.  A C event completes what it covers: the
 *   oldest outstanding request of exactly its sector and size, else every
 *   outstanding request it overlaps, for the sectors it overlaps (a request
 *   the block layer merged with others completes with their C, a request
 *   it split completes with the last C of its pieces).  The other events
 *   (G, I, M, F, P, U, UT, X, A, B, R, S, T, m messages) are read and
 *   ignored, and so are the "Input file ... added" lines blkparse prints;
 *   reading stops at the summary blkparse appends ("CPU0 (8,16):", ...).
 *   The events must all be of one device.
 *
 * Times are in nanoseconds from the first request of the trace (the first
 * request's time_ns is 0).  A bad line ends the read with an error that
 * names it: the requests of a half-read trace would simulate something else.
 */
#ifndef REDCAP_TRACE_H
#define REDCAP_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* done_ns of a request whose completion the trace does not show. */
#define TRACE_NO_TIME		UINT64_MAX
/* A size for the error buffers that holds every message with a path of some length. */
#define TRACE_ERR_MAX		512

enum trace_op { TRACE_READ, TRACE_WRITE, TRACE_DISCARD };

struct trace_req {
	uint64_t time_ns;	/* issue time, from the first request */
	uint64_t done_ns;	/* completion (same origin, >= time_ns), or TRACE_NO_TIME */
	uint64_t sector;	/* first sector (512 bytes) */
	uint32_t sectors;	/* length in sectors, at least 1 */
	uint32_t pid;		/* the process that issued it */
	enum trace_op op;
};

struct trace {
	struct trace_req *req;	/* sorted by time_ns; equal times keep the file's order */
	size_t nr;		/* at least 1 after a successful read */
};

enum trace_format { TRACE_FMT_CSV, TRACE_FMT_BLKPARSE };

/* "csv" or "blkparse" as an enum trace_format, or -1. */
int trace_format_parse(const char *name);

/*
 * Reads a whole text trace from @f into @t (which it overwrites, without
 * freeing it).  @name names the source in messages.  Returns 0, or -1 with
 * @t empty and in @err (@errlen bytes, truncated to fit) one of:
 *   "NAME: line N: why"	the first bad line (N counts from 1)
 *   "NAME: why"		no requests, a read error, out of memory, or binary
 *				blktrace data (trace_open() reads those)
 */
int trace_read(FILE *f, const char *name, enum trace_format fmt, struct trace *t,
	       char *err, size_t errlen);

/*
 * trace_read() of the file at @path, named by @path in messages.  With
 * TRACE_FMT_BLKPARSE a binary blktrace file (its first word is blktrace's
 * magic) is read through "blkparse -q": a per-CPU file DEV.blktrace.N
 * brings in its siblings DEV.blktrace.* (one capture, all its CPUs), any
 * other file is fed to blkparse on its standard input.  blkparse's own
 * complaints go to standard error; the message then says blkparse failed,
 * or that it is not installed (Debian package blktrace).
 */
int trace_open(const char *path, enum trace_format fmt, struct trace *t, char *err,
	       size_t errlen);

/* Frees what a successful read gave @t and leaves it empty; a no-op on an empty trace. */
void trace_free(struct trace *t);

#endif
