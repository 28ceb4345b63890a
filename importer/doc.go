// Package importer turns files into Delta table versions: a torchvision
// ImageFolder tree or a NumPy .npy file (optionally gzipped) becomes rows
// that package writer commits.
//
// # Sources
//
// Open detects the kind of a path: a directory is an ImageFolder tree, a
// file starting with the .npy magic (directly or inside gzip) is NumPy;
// anything else is refused. Each Source has a schema, streams its rows in a
// deterministic order, and says whether it supplies ids:
//
//   - ImageFolder: columns id (long), label (string, the class folder),
//     path (string, relative with '/', e.g. "cat/001.png") and content
//     (binary, the file's bytes unchanged). Classes are the sub-folders of
//     the root, sorted; files are found recursively under each class with
//     torchvision's IMG_EXTENSIONS (.jpg .jpeg .png .ppm .bmp .pgm .tif
//     .tiff .webp, case-insensitive), in the order torchvision's
//     make_dataset lists them (directories sorted by path, then file
//     names sorted). A class with no image fails the import, as in
//     torchvision. Files directly in the root are ignored. The rows are
//     written in a seeded pseudo-random permutation of that order
//     (ShuffleSeed), not class by class, so that every contiguous shard of
//     a mount holds every class; the permutation depends only on the
//     list of images, so the same tree always gets the same ids.
//   - Npy: see the Npy type for how NumPy types map to Delta types.
//
// # Reading the source
//
// Nothing in a source is opened unless it is a regular file (after
// following symbolic links): a named pipe would block, a link to /dev/zero
// never end. An ImageFolder's images are checked while the tree is listed,
// before any is read: one that is a named pipe, a socket or a device, or
// larger than Options.MaxFileSize (each image is read whole into memory),
// fails the import with an error naming it. Reads never block (see
// storage.ReadLocalFile) and stop when the context given to Open is done.
//
// # Ids
//
// Every table the importer writes has a long "id" column. When the source
// has none (ImageFolder, a .npy without an "id" field), the writer numbers
// the rows from max(id)+1 of the table (0 for a new table), so ids stay
// unique across appends, also between concurrent imports. A .npy "id"
// field is kept as it is.
package importer
