/*
 * A fake libcuda.so.1 for the gds tests: the CUDA driver API calls the gds
 * package makes, with "device memory" in host memory (cuMemAlloc is
 * aligned_alloc, cuMemcpy is memcpy). Like the real driver, memory calls
 * fail with CUDA_ERROR_INVALID_CONTEXT on a thread with no current context,
 * which checks that the Go side binds the context on every OS thread it
 * uses. fake_cuda_set chooses the device count and a cuInit failure.
 *
 * Built by the tests with: gcc -shared -fPIC -o libcuda.so.1 fakecuda.c
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

enum {
	SUCCESS = 0,
	INVALID_VALUE = 1,
	OUT_OF_MEMORY = 2,
	NOT_INITIALIZED = 3,
	INVALID_DEVICE = 101,
	INVALID_CONTEXT = 201,
};

static int devices = 1, init_err, inited;
static long n_alloc, n_free, n_htod, n_dtoh, n_retain, n_release, n_nocontext;
static int ctxs[8];
static __thread CUcontext current;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void fake_cuda_set(int ndev, int init_error) {
	devices = ndev;
	init_err = init_error;
}

void fake_cuda_reset(void) {
	devices = 1;
	init_err = 0;
	pthread_mutex_lock(&mu);
	n_alloc = n_free = n_htod = n_dtoh = n_retain = n_release = n_nocontext = 0;
	pthread_mutex_unlock(&mu);
}

/* fake_cuda_stat returns a counter: alloc, free, htod, dtoh, retain,
 * release, nocontext (calls refused for want of a current context). */
long fake_cuda_stat(const char *what) {
	long v = -1;
	pthread_mutex_lock(&mu);
	if (!strcmp(what, "alloc")) v = n_alloc;
	else if (!strcmp(what, "free")) v = n_free;
	else if (!strcmp(what, "htod")) v = n_htod;
	else if (!strcmp(what, "dtoh")) v = n_dtoh;
	else if (!strcmp(what, "retain")) v = n_retain;
	else if (!strcmp(what, "release")) v = n_release;
	else if (!strcmp(what, "nocontext")) v = n_nocontext;
	pthread_mutex_unlock(&mu);
	return v;
}

static void count(long *c) {
	pthread_mutex_lock(&mu);
	(*c)++;
	pthread_mutex_unlock(&mu);
}

static int have_context(void) {
	if (current) return 1;
	count(&n_nocontext);
	return 0;
}

CUresult cuInit(unsigned int flags) {
	if (flags != 0) return INVALID_VALUE;
	if (init_err) return init_err;
	inited = 1;
	return SUCCESS;
}

CUresult cuDriverGetVersion(int *v) {
	*v = 12040;
	return SUCCESS;
}

CUresult cuDeviceGetCount(int *n) {
	if (!inited) return NOT_INITIALIZED;
	*n = devices;
	return SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	if (!inited) return NOT_INITIALIZED;
	if (ordinal < 0 || ordinal >= devices) return INVALID_DEVICE;
	*d = ordinal;
	return SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
	snprintf(name, len, "Fake GPU %d", d);
	return SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice d) {
	snprintf(id, len, "0000:%02x:00.0", 7 + d);
	return SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
	*bytes = (size_t)16 << 30;
	return SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d) {
	if (d < 0 || d >= devices || d >= 8) return INVALID_DEVICE;
	*ctx = &ctxs[d];
	count(&n_retain);
	return SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
	count(&n_release);
	return SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
	current = ctx;
	return SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	if (!have_context()) return INVALID_CONTEXT;
	if (n == 0) return INVALID_VALUE;
	void *m = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	if (!m) return OUT_OF_MEMORY;
	memset(m, 0xEE, n);
	*p = (CUdeviceptr)m;
	count(&n_alloc);
	return SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
	if (!have_context()) return INVALID_CONTEXT;
	free((void *)p);
	count(&n_free);
	return SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	if (!have_context()) return INVALID_CONTEXT;
	memcpy((void *)dst, src, n);
	count(&n_htod);
	return SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	if (!have_context()) return INVALID_CONTEXT;
	memcpy(dst, (void *)src, n);
	count(&n_dtoh);
	return SUCCESS;
}

CUresult cuGetErrorName(CUresult e, const char **s) {
	switch (e) {
	case NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; return SUCCESS;
	case INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; return SUCCESS;
	case 100: *s = "CUDA_ERROR_NO_DEVICE"; return SUCCESS;
	}
	return INVALID_VALUE;
}
