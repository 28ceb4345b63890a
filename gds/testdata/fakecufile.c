/*
 * A fake libcufile.so.0 for the gds tests: the cuFile ABI of cufile.h
 * (driver open/close/properties, handle and buffer (de)registration,
 * cuFileRead), with no GPU. cuFileRead preads into the "device" pointer it
 * is given, which in the tests is host memory from the fake libcuda's
 * cuMemAlloc. Every call is logged; the fake_* functions let the test read
 * the log and make any call fail with a chosen status.
 *
 * Built by the tests with: gcc -shared -fPIC -o libcufile.so.0 fakecufile.c
 * -DOMIT_READ builds a library without cuFileRead (missing symbol test).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef struct { int err; int cu_err; } CUfileError_t;

typedef struct {
	struct {
		unsigned int major_version, minor_version;
		size_t poll_thresh_size, max_direct_io_size;
		unsigned int dstatusflags, dcontrolflags;
	} nvfs;
	unsigned int fflags, max_device_cache_size, per_buffer_cache_size,
	    max_device_pinned_mem_size, max_batch_io_size, max_batch_io_timeout_msecs;
} CUfileDrvProps_t;

typedef struct {
	int type; /* CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1 */
	union { int fd; void *handle; } handle;
	const void *fs_ops;
} CUfileDescr_t;

typedef void *CUfileHandle_t;

#define MAGIC 0xC0F1E5u
struct fh {
	unsigned magic;
	int fd;    /* the caller's descriptor */
	int rfd;   /* our own, without O_DIRECT, so unaligned reads work */
	char path[4096];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char *logbuf;
static size_t loglen, logcap;
static int driver_open, compat;
static size_t maxread; /* 0: no cap; else cuFileRead returns at most this */

#define MAXFAIL 16
static struct { char op[64]; int err, cu_err; } fails[MAXFAIL];
static int nfails;

#define MAXBUF 256
static struct { unsigned long ptr; size_t len; } bufs[MAXBUF];

static void logline(const char *fmt, ...) {
	char line[8192];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0) return;
	if (n > (int)sizeof line - 2) n = sizeof line - 2;
	line[n++] = '\n';
	pthread_mutex_lock(&mu);
	if (loglen + n > logcap) {
		logcap = (loglen + n) * 2 + 4096;
		logbuf = realloc(logbuf, logcap);
	}
	memcpy(logbuf + loglen, line, n);
	loglen += n;
	pthread_mutex_unlock(&mu);
}

/* failure returns the configured status for op, or {0,0}. */
static CUfileError_t failure(const char *op) {
	CUfileError_t e = {0, 0};
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nfails; i++)
		if (strcmp(fails[i].op, op) == 0) {
			e.err = fails[i].err;
			e.cu_err = fails[i].cu_err;
		}
	pthread_mutex_unlock(&mu);
	return e;
}

/* ---- control, called by the test through purego ---- */

void fake_cufile_reset(void) {
	pthread_mutex_lock(&mu);
	loglen = 0;
	nfails = 0;
	compat = 0;
	maxread = 0;
	driver_open = 0;
	memset(bufs, 0, sizeof bufs);
	pthread_mutex_unlock(&mu);
}

void fake_cufile_set_compat(int on) { compat = on; }

void fake_cufile_set_maxread(size_t n) { maxread = n; }

/* op's next calls fail: err is the CUfileOpError (for cuFileRead, the
 * return value, e.g. -5030 or -1 with errno cu_err). */
void fake_cufile_fail(const char *op, int err, int cu_err) {
	pthread_mutex_lock(&mu);
	if (nfails < MAXFAIL) {
		snprintf(fails[nfails].op, sizeof fails[nfails].op, "%s", op);
		fails[nfails].err = err;
		fails[nfails].cu_err = cu_err;
		nfails++;
	}
	pthread_mutex_unlock(&mu);
}

/* fake_cufile_log copies up to cap bytes of the log into dst and returns
 * the log's length. */
size_t fake_cufile_log(char *dst, size_t cap) {
	pthread_mutex_lock(&mu);
	size_t n = loglen < cap ? loglen : cap;
	if (n) memcpy(dst, logbuf, n);
	size_t total = loglen;
	pthread_mutex_unlock(&mu);
	return total;
}

int fake_cufile_driver_is_open(void) { return driver_open; }

/* ---- the cuFile API ---- */

CUfileError_t cuFileDriverOpen(void) {
	CUfileError_t e = failure("cuFileDriverOpen");
	logline("driver_open err=%d", e.err);
	if (e.err == 0) driver_open++;
	return e;
}

CUfileError_t cuFileDriverClose_v2(void) {
	CUfileError_t e = failure("cuFileDriverClose");
	logline("driver_close err=%d", e.err);
	if (e.err == 0 && driver_open > 0) driver_open--;
	return e;
}

CUfileError_t cuFileDriverGetProperties(CUfileDrvProps_t *p) {
	CUfileError_t e = failure("cuFileDriverGetProperties");
	logline("get_properties err=%d", e.err);
	if (e.err) return e;
	memset(p, 0, sizeof *p);
	if (!compat) {
		p->nvfs.major_version = 2;
		p->nvfs.minor_version = 17;
		p->nvfs.dstatusflags = 1u << 4; /* NVMe */
	}
	p->nvfs.dcontrolflags = 1u << 1; /* allow compat mode */
	p->nvfs.poll_thresh_size = 4;
	p->nvfs.max_direct_io_size = 16384;
	p->max_device_pinned_mem_size = 33554432;
	return e;
}

CUfileError_t cuFileGetVersion(int *v) {
	CUfileError_t e = {0, 0};
	*v = 1130;
	return e;
}

CUfileError_t cuFileHandleRegister(CUfileHandle_t *fh, CUfileDescr_t *d) {
	CUfileError_t e = failure("cuFileHandleRegister");
	char path[4096] = "";
	int fd = d ? d->handle.fd : -1;
	int direct = 0;
	if (fd >= 0) {
		char link[64];
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, path, sizeof path - 1);
		if (n > 0) path[n] = 0;
		int fl = fcntl(fd, F_GETFL);
		direct = fl >= 0 && (fl & O_DIRECT) != 0;
	}
	if (e.err == 0 && !driver_open) e.err = 5001;
	if (e.err == 0 && (d == NULL || d->type != 1 || d->fs_ops != NULL)) e.err = 5022; /* INVALID_VALUE */
	if (e.err) {
		logline("register_failed err=%d fd=%d path=%s", e.err, fd, path);
		return e;
	}
	struct fh *h = calloc(1, sizeof *h);
	h->magic = MAGIC;
	h->fd = fd;
	snprintf(h->path, sizeof h->path, "%s", path);
	char self[64];
	snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
	h->rfd = open(self, O_RDONLY);
	*fh = h;
	logline("register fh=%p fd=%d direct=%d path=%s", (void *)h, fd, direct, path);
	return e;
}

void cuFileHandleDeregister(CUfileHandle_t fh) {
	struct fh *h = fh;
	if (h == NULL || h->magic != MAGIC) {
		logline("deregister_bad fh=%p", fh);
		return;
	}
	logline("deregister fh=%p path=%s", fh, h->path);
	h->magic = 0;
	close(h->rfd);
	/* not freed: a later use of the stale handle must be detectable */
}

CUfileError_t cuFileBufRegister(const void *ptr, size_t len, int flags) {
	CUfileError_t e = failure("cuFileBufRegister");
	logline("buf_register ptr=%#lx len=%zu flags=%d err=%d", (unsigned long)ptr, len, flags, e.err);
	if (e.err) return e;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXBUF; i++) {
		if (bufs[i].ptr == (unsigned long)ptr) {
			pthread_mutex_unlock(&mu);
			e.err = 5023; /* MEMORY_ALREADY_REGISTERED */
			return e;
		}
	}
	for (int i = 0; i < MAXBUF; i++) {
		if (bufs[i].ptr == 0) {
			bufs[i].ptr = (unsigned long)ptr;
			bufs[i].len = len;
			break;
		}
	}
	pthread_mutex_unlock(&mu);
	return e;
}

CUfileError_t cuFileBufDeregister(const void *ptr) {
	CUfileError_t e = failure("cuFileBufDeregister");
	logline("buf_deregister ptr=%#lx err=%d", (unsigned long)ptr, e.err);
	if (e.err) return e;
	pthread_mutex_lock(&mu);
	e.err = 5024; /* MEMORY_NOT_REGISTERED */
	for (int i = 0; i < MAXBUF; i++)
		if (bufs[i].ptr == (unsigned long)ptr) {
			bufs[i].ptr = 0;
			e.err = 0;
		}
	pthread_mutex_unlock(&mu);
	return e;
}

#ifndef OMIT_READ
ssize_t cuFileRead(CUfileHandle_t fh, void *base, size_t size, off_t foff, off_t boff) {
	struct fh *h = fh;
	CUfileError_t e = failure("cuFileRead");
	if (e.err) {
		logline("read_failed ret=%d", e.err);
		if (e.err == -1) errno = e.cu_err;
		return e.err;
	}
	if (!driver_open) return -5001;
	if (h == NULL || h->magic != MAGIC) {
		logline("read_bad_handle fh=%p", fh);
		return -5027; /* HANDLE_NOT_REGISTERED */
	}
	/* A registered buffer must contain the whole destination range. */
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXBUF; i++)
		if (bufs[i].ptr == (unsigned long)base && (size_t)boff + size > bufs[i].len) {
			pthread_mutex_unlock(&mu);
			logline("read_range_error base=%#lx boff=%ld size=%zu", (unsigned long)base, (long)boff, size);
			return -5014; /* CUDA_POINTER_RANGE_ERROR */
		}
	pthread_mutex_unlock(&mu);
	size_t want = size;
	if (maxread && want > maxread) want = maxread;
	size_t done = 0;
	while (done < want) {
		ssize_t n = pread(h->rfd, (char *)base + boff + done, want - done, foff + done);
		if (n < 0) {
			if (errno == EINTR) continue;
			return -1;
		}
		if (n == 0) break;
		done += n;
	}
	logline("read fh=%p path=%s size=%zu foff=%ld base=%#lx boff=%ld ret=%zu", fh, h->path, size, (long)foff,
	     (unsigned long)base, (long)boff, done);
	return done;
}
#endif
