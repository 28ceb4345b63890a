package gds

import (
	"errors"
	"fmt"
)

// Status is a cuFile status code, the CUfileOpError enum of cufile.h. The
// driver APIs return it in CUfileError_t.err; cuFileRead returns it negated.
type Status int32

// The CUfileOpError values of cufile.h (CUFILEOP_BASE_ERR is 5000; 5021 and
// 5032 are unassigned).
const (
	StatusSuccess                   Status = 0
	StatusDriverNotInitialized      Status = 5001
	StatusDriverInvalidProps        Status = 5002
	StatusDriverUnsupportedLimit    Status = 5003
	StatusDriverVersionMismatch     Status = 5004
	StatusDriverVersionReadError    Status = 5005
	StatusDriverClosing             Status = 5006
	StatusPlatformNotSupported      Status = 5007
	StatusIONotSupported            Status = 5008
	StatusDeviceNotSupported        Status = 5009
	StatusNVFSDriverError           Status = 5010
	StatusCUDADriverError           Status = 5011
	StatusCUDAPointerInvalid        Status = 5012
	StatusCUDAMemoryTypeInvalid     Status = 5013
	StatusCUDAPointerRangeError     Status = 5014
	StatusCUDAContextMismatch       Status = 5015
	StatusInvalidMappingSize        Status = 5016
	StatusInvalidMappingRange       Status = 5017
	StatusInvalidFileType           Status = 5018
	StatusInvalidFileOpenFlag       Status = 5019
	StatusDIONotSet                 Status = 5020
	StatusInvalidValue              Status = 5022
	StatusMemoryAlreadyRegistered   Status = 5023
	StatusMemoryNotRegistered       Status = 5024
	StatusPermissionDenied          Status = 5025
	StatusDriverAlreadyOpen         Status = 5026
	StatusHandleNotRegistered       Status = 5027
	StatusHandleAlreadyRegistered   Status = 5028
	StatusDeviceNotFound            Status = 5029
	StatusInternalError             Status = 5030
	StatusGetNewFDFailed            Status = 5031
	StatusNVFSSetupError            Status = 5033
	StatusIODisabled                Status = 5034
	StatusBatchSubmitFailed         Status = 5035
	StatusGPUMemoryPinningFailed    Status = 5036
	StatusBatchFull                 Status = 5037
	StatusAsyncNotSupported         Status = 5038
	StatusInternalBatchSetupError   Status = 5039
	StatusInternalBatchSubmitError  Status = 5040
	StatusInternalBatchGetStatusErr Status = 5041
	StatusInternalBatchCancelError  Status = 5042
	StatusNoMemError                Status = 5043
	StatusIOError                   Status = 5044
	StatusInternalBufRegisterError  Status = 5045
	StatusHashOprError              Status = 5046
	StatusInvalidContextError       Status = 5047
	StatusNVFSInternalDriverError   Status = 5048
	StatusBatchNoCompatError        Status = 5049
	StatusIOMaxError                Status = 5050
)

type statusInfo struct {
	name string // the enum constant's name in cufile.h
	desc string
}

var statusTable = map[Status]statusInfo{
	StatusSuccess:                   {"CU_FILE_SUCCESS", "success"},
	StatusDriverNotInitialized:      {"CU_FILE_DRIVER_NOT_INITIALIZED", "nvidia-fs driver is not loaded (set allow_compat_mode in cufile.json to use compatibility mode)"},
	StatusDriverInvalidProps:        {"CU_FILE_DRIVER_INVALID_PROPS", "invalid property"},
	StatusDriverUnsupportedLimit:    {"CU_FILE_DRIVER_UNSUPPORTED_LIMIT", "property range error"},
	StatusDriverVersionMismatch:     {"CU_FILE_DRIVER_VERSION_MISMATCH", "nvidia-fs driver version mismatch"},
	StatusDriverVersionReadError:    {"CU_FILE_DRIVER_VERSION_READ_ERROR", "nvidia-fs driver version read error"},
	StatusDriverClosing:             {"CU_FILE_DRIVER_CLOSING", "driver shutdown in progress"},
	StatusPlatformNotSupported:      {"CU_FILE_PLATFORM_NOT_SUPPORTED", "GPUDirect Storage not supported on this platform"},
	StatusIONotSupported:            {"CU_FILE_IO_NOT_SUPPORTED", "GPUDirect Storage not supported on this file"},
	StatusDeviceNotSupported:        {"CU_FILE_DEVICE_NOT_SUPPORTED", "GPUDirect Storage not supported on this GPU"},
	StatusNVFSDriverError:           {"CU_FILE_NVFS_DRIVER_ERROR", "nvidia-fs driver ioctl error"},
	StatusCUDADriverError:           {"CU_FILE_CUDA_DRIVER_ERROR", "CUDA driver API error"},
	StatusCUDAPointerInvalid:        {"CU_FILE_CUDA_POINTER_INVALID", "invalid device pointer"},
	StatusCUDAMemoryTypeInvalid:     {"CU_FILE_CUDA_MEMORY_TYPE_INVALID", "invalid pointer memory type"},
	StatusCUDAPointerRangeError:     {"CU_FILE_CUDA_POINTER_RANGE_ERROR", "pointer range exceeds the allocated address range"},
	StatusCUDAContextMismatch:       {"CU_FILE_CUDA_CONTEXT_MISMATCH", "CUDA context mismatch"},
	StatusInvalidMappingSize:        {"CU_FILE_INVALID_MAPPING_SIZE", "access beyond the maximum pinned size"},
	StatusInvalidMappingRange:       {"CU_FILE_INVALID_MAPPING_RANGE", "access beyond the mapped size"},
	StatusInvalidFileType:           {"CU_FILE_INVALID_FILE_TYPE", "unsupported file type"},
	StatusInvalidFileOpenFlag:       {"CU_FILE_INVALID_FILE_OPEN_FLAG", "unsupported file open flags"},
	StatusDIONotSet:                 {"CU_FILE_DIO_NOT_SET", "O_DIRECT not set on the file descriptor"},
	StatusInvalidValue:              {"CU_FILE_INVALID_VALUE", "invalid arguments"},
	StatusMemoryAlreadyRegistered:   {"CU_FILE_MEMORY_ALREADY_REGISTERED", "device pointer already registered"},
	StatusMemoryNotRegistered:       {"CU_FILE_MEMORY_NOT_REGISTERED", "device pointer lookup failure"},
	StatusPermissionDenied:          {"CU_FILE_PERMISSION_DENIED", "driver or file access error"},
	StatusDriverAlreadyOpen:         {"CU_FILE_DRIVER_ALREADY_OPEN", "driver is already open"},
	StatusHandleNotRegistered:       {"CU_FILE_HANDLE_NOT_REGISTERED", "file descriptor is not registered"},
	StatusHandleAlreadyRegistered:   {"CU_FILE_HANDLE_ALREADY_REGISTERED", "file descriptor is already registered"},
	StatusDeviceNotFound:            {"CU_FILE_DEVICE_NOT_FOUND", "GPU device not found"},
	StatusInternalError:             {"CU_FILE_INTERNAL_ERROR", "internal error"},
	StatusGetNewFDFailed:            {"CU_FILE_GETNEWFD_FAILED", "failed to obtain a new file descriptor"},
	StatusNVFSSetupError:            {"CU_FILE_NVFS_SETUP_ERROR", "nvidia-fs driver initialization error"},
	StatusIODisabled:                {"CU_FILE_IO_DISABLED", "GPUDirect Storage disabled by configuration on this file"},
	StatusBatchSubmitFailed:         {"CU_FILE_BATCH_SUBMIT_FAILED", "failed to submit batch operation"},
	StatusGPUMemoryPinningFailed:    {"CU_FILE_GPU_MEMORY_PINNING_FAILED", "failed to allocate pinned GPU memory"},
	StatusBatchFull:                 {"CU_FILE_BATCH_FULL", "queue full for batch operation"},
	StatusAsyncNotSupported:         {"CU_FILE_ASYNC_NOT_SUPPORTED", "cuFile stream operation not supported"},
	StatusInternalBatchSetupError:   {"CU_FILE_INTERNAL_BATCH_SETUP_ERROR", "batch setup internal error, retry later"},
	StatusInternalBatchSubmitError:  {"CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR", "batch submit internal error, retry later"},
	StatusInternalBatchGetStatusErr: {"CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR", "batch get status internal error, retry later"},
	StatusInternalBatchCancelError:  {"CU_FILE_INTERNAL_BATCH_CANCEL_ERROR", "batch cancel internal error, retry later"},
	StatusNoMemError:                {"CU_FILE_NOMEM_ERROR", "out of memory, retry later"},
	StatusIOError:                   {"CU_FILE_IO_ERROR", "I/O error"},
	StatusInternalBufRegisterError:  {"CU_FILE_INTERNAL_BUF_REGISTER_ERROR", "buffer registration error"},
	StatusHashOprError:              {"CU_FILE_HASH_OPR_ERROR", "hash operation error"},
	StatusInvalidContextError:       {"CU_FILE_INVALID_CONTEXT_ERROR", "invalid context"},
	StatusNVFSInternalDriverError:   {"CU_FILE_NVFS_INTERNAL_DRIVER_ERROR", "nvidia-fs internal driver error"},
	StatusBatchNoCompatError:        {"CU_FILE_BATCH_NOCOMPAT_ERROR", "compatibility mode is off"},
	StatusIOMaxError:                {"CU_FILE_IO_MAX_ERROR", "GPUDirect Storage maximum error"},
}

// Statuses returns every status code cufile.h defines, success first, in
// increasing order.
func Statuses() []Status {
	out := make([]Status, 0, len(statusTable))
	out = append(out, StatusSuccess)
	for s := StatusDriverNotInitialized; s <= StatusIOMaxError; s++ {
		if _, ok := statusTable[s]; ok {
			out = append(out, s)
		}
	}
	return out
}

// Name returns the cufile.h constant name, for example
// "CU_FILE_DRIVER_NOT_INITIALIZED", or "CU_FILE_UNKNOWN_ERROR" for a code
// cufile.h does not define.
func (s Status) Name() string {
	if i, ok := statusTable[s]; ok {
		return i.name
	}
	return "CU_FILE_UNKNOWN_ERROR"
}

// Description returns a short English description of the status.
func (s Status) Description() string {
	if i, ok := statusTable[s]; ok {
		return i.desc
	}
	return "unknown cuFile error"
}

// String returns "NAME (CODE)".
func (s Status) String() string { return fmt.Sprintf("%s (%d)", s.Name(), int32(s)) }

// fileUnsupported reports whether a cuFileHandleRegister failure means
// only that GDS cannot serve this file (its filesystem or open flags), so
// the reader may serve the file through the compatibility path instead.
func (s Status) fileUnsupported() bool {
	switch s {
	case StatusIONotSupported, StatusInvalidFileType, StatusInvalidFileOpenFlag,
		StatusDIONotSet, StatusIODisabled, StatusPlatformNotSupported:
		return true
	}
	return false
}

// Error is a failed cuFile call. Code is the cuFile status; when it is
// StatusCUDADriverError, CUResult holds the CUDA driver's CUresult.
type Error struct {
	Op       string // the cuFile function, for example "cuFileHandleRegister"
	Code     Status
	Name     string // Code.Name()
	CUResult int32  // CUfileError_t.cu_err; 0 unless the CUDA driver failed
	Detail   string // what the call was about (a file path), may be empty
}

func newError(op string, code Status, cuErr int32, detail string) *Error {
	return &Error{Op: op, Code: code, Name: code.Name(), CUResult: cuErr, Detail: detail}
}

// Error formats as "cuFileHandleRegister: CU_FILE_INTERNAL_ERROR (5030):
// internal error", with the file and the CUDA error appended when known.
func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (%d): %s", e.Op, e.Name, int32(e.Code), e.Code.Description())
	if e.CUResult != 0 {
		s += fmt.Sprintf(": CUDA %s (%d)", cuResultName(e.CUResult), e.CUResult)
	}
	if e.Detail != "" {
		s += " [" + e.Detail + "]"
	}
	return s
}

// Is reports whether target is an *Error with the same Code (and the same
// Op when target's Op is set), so errors.Is(err, &gds.Error{Code:
// gds.StatusDriverNotInitialized}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Code == e.Code && (t.Op == "" || t.Op == e.Op)
}

// CUDAError is a failed CUDA driver API call.
type CUDAError struct {
	Op   string // the CUDA function, for example "cuMemAlloc_v2"
	Code int32  // CUresult
	Name string // for example "CUDA_ERROR_OUT_OF_MEMORY"
}

func (e *CUDAError) Error() string { return fmt.Sprintf("%s: %s (%d)", e.Op, e.Name, e.Code) }

// cuResultNames holds the CUresult names deltafs reports most; others print
// as CUDA_ERROR_<code> unless the loaded libcuda names them (cuGetErrorName).
var cuResultNames = map[int32]string{
	0:   "CUDA_SUCCESS",
	1:   "CUDA_ERROR_INVALID_VALUE",
	2:   "CUDA_ERROR_OUT_OF_MEMORY",
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	4:   "CUDA_ERROR_DEINITIALIZED",
	34:  "CUDA_ERROR_STUB_LIBRARY",
	35:  "CUDA_ERROR_INSUFFICIENT_DRIVER",
	46:  "CUDA_ERROR_DEVICE_UNAVAILABLE",
	100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE",
	201: "CUDA_ERROR_INVALID_CONTEXT",
	304: "CUDA_ERROR_OPERATING_SYSTEM",
	400: "CUDA_ERROR_INVALID_HANDLE",
	500: "CUDA_ERROR_NOT_FOUND",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	999: "CUDA_ERROR_UNKNOWN",
}

func cuResultName(code int32) string {
	if n, ok := cuResultNames[code]; ok {
		return n
	}
	return fmt.Sprintf("CUDA_ERROR_%d", code)
}

// SymbolError is a library that loaded but lacks a function deltafs needs.
type SymbolError struct {
	Lib    string // the library as asked for, for example "libcufile.so.0"
	File   string // the file it loaded from, when known
	Symbol string
	Err    error // dlsym's error (not repeated in the message)
}

func (e *SymbolError) Error() string {
	lib := e.Lib
	if e.File != "" && e.File != e.Lib {
		lib += " (" + e.File + ")"
	}
	return fmt.Sprintf("%s: missing symbol %s", lib, e.Symbol)
}

func (e *SymbolError) Unwrap() error { return e.Err }

// ErrClosed is returned by a Reader's methods after Close.
var ErrClosed = errors.New("gds: reader closed")

// ErrNotGDS is returned by NewReader in ModeGDS when GPUDirect Storage is not
// usable; it wraps the reason.
var ErrNotGDS = errors.New("gds: GPUDirect Storage not usable")
