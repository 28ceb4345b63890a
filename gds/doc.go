// Package gds is deltafs's optional GPUDirect Storage (GDS) read path:
// reading cached samples from local NVMe straight into GPU memory with
// NVIDIA cuFile, with fallbacks for machines that lack any piece of it.
//
// # Why extents, not FUSE
//
// A read through FUSE always lands in the reading process's host memory, so
// GDS cannot work through the mount. It can work on the files of deltafs's
// disk cache, which live on a local ext4 or XFS filesystem: the cache keeps
// each sample's bytes contiguous at a 4 KiB-aligned offset of a cache file,
// deltafs tells the loader where they are (an extents.Extent: file,
// offset, length, CRC-32), and the loader reads them with cuFile into
// device memory. Package extents defines the extents, the extent
// attribute and the per-shard extent list (_extents.tsv), and finds them
// for a mounted shard (extents.OpenShard) or sample file
// (extents.SampleExtent). Reader.ReadSamples, Reader.ReadSample and
// Reader.ReadSampleExtent read samples of a mounted shard through these,
// verified (see Checksums), reading a sample again when its entry was
// evicted or damaged meanwhile.
//
// # Checksums
//
// Every extent carries the CRC-32 of the sample's bytes (extents.Checksum;
// why, in package extents). Readers verify what they read:
//
//   - PathHost: the bytes in host memory;
//   - PathCompat: the bytes in the staging buffer, as they are copied to
//     the device;
//   - PathGDS: the bytes cuFile put on the device, copied back through a
//     host staging buffer (cuMemcpyDtoH) and summed on the CPU. That costs
//     one device-to-host copy of every sample and a CRC on the CPU, which
//     takes back part of what GDS saves (host memory bandwidth and CPU
//     time, not the DMA from NVMe). A CRC kernel on the device would avoid
//     it; deltafs loads no kernels and cannot test one without a GPU.
//
// ReadExtent and ReadBatch return a mismatch as an
// *extents.ChecksumError (extents without a checksum, such as `deltafs gds
// bench --dir`'s, are not verified). The shard and sample readers treat a
// mismatch, like a cache file that ends inside the extent, as a corrupt
// miss: they log it, read the extent list or attribute again (deltafs
// re-materialises the sample, rewriting the entry), read the sample again,
// and as a last resort read the sample file through the mount, verified
// too. They report it (ShardResult.Corrupt, Result.Corrupt) and return the
// true bytes, or an error: never the wrong ones.
//
// # Paths
//
// A Reader moves bytes by one of three paths, chosen once by NewReader and
// reported by Reader.Path and in every Result:
//
//   - PathGDS: cuFileRead from a cache file opened with O_DIRECT (plain
//     open when the filesystem refuses O_DIRECT, reported as Direct=false)
//     into device memory registered with cuFileBufRegister. In a batch,
//     samples sit at 4 KiB-aligned buffer offsets and aligned extents are
//     read in whole 4 KiB blocks, so every DMA is aligned.
//   - PathCompat: pread into a host staging buffer, then cuMemcpyHtoD. Used
//     when there is a GPU but libcufile is missing, its driver fails to
//     open, or it reports compatibility mode (nvidia-fs version 0.0: cuFile
//     would do the same pread and copy itself). In ModeAuto a single file
//     that cuFile cannot serve (CU_FILE_IO_NOT_SUPPORTED and the like, at
//     cuFileHandleRegister) is read this way too.
//   - PathHost: pread into host memory, when there is no usable GPU or the
//     destination is a HostBuffer.
//
// GDS is enabled only when everything is present: libcuda and libcufile
// load with every symbol, cuInit succeeds with at least one device, and
// cuFileDriverOpen succeeds with nvidia-fs in use. Otherwise Info().Reason
// says what was missing; ModeGDS turns that into an error instead.
//
// # Libraries
//
// Nothing links against CUDA. libcuda.so.1 and libcufile.so.0 are opened
// at run time with purego (no cgo needed), every symbol is looked up with
// dlsym before it is bound, so a library lacking one is a *SymbolError,
// not a panic. DELTAFS_CUDA_LIB and DELTAFS_CUFILE_LIB (or Options) name
// other files. GPU detection for the probe uses NVML through go-nvml,
// which is cgo: a binary built with CGO_ENABLED=0 reports "NVML
// unavailable: built without cgo" and finds GPUs through libcuda instead.
// nvml.Init gates every other NVML call.
//
// # Threads
//
// A CUDA context is current per OS thread and goroutines move between
// threads, so every CUDA or cuFile call runs with the goroutine locked to
// its thread and the reader's context (the device's primary context) made
// current there first.
//
// # Errors
//
// A failed cuFile call is an *Error with the function, the CUfileOpError
// code and its cufile.h name, for example
//
//	cuFileHandleRegister: CU_FILE_INTERNAL_ERROR (5030): internal error [/cache/3f.blk]
//
// plus the CUresult when the code is CU_FILE_CUDA_DRIVER_ERROR. A failed
// CUDA call is a *CUDAError; cuFileRead's -1 is the errno (syscall.Errno).
//
// # Testing
//
// The tests build fake libcufile.so.0 and libcuda.so.1 from
// testdata/*.c with gcc: the real ABI, reads by pread into host memory
// posing as device memory, every call logged. NVML detection is tested
// with go-nvml's mock package (cgo builds only). Only a machine with a GPU,
// nvidia-fs and an NVMe cache can show real DMA: run `deltafs gds probe`
// and `deltafs gds bench --verify` there.
package gds
