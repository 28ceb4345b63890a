package importer

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/deltafs/deltafs/snapshot"
	"github.com/deltafs/deltafs/storage"
	"github.com/deltafs/deltafs/writer"
)

// imgExtensions are torchvision's IMG_EXTENSIONS.
var imgExtensions = []string{".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"}

// isImage reports whether name has one of imgExtensions, ignoring case.
func isImage(name string) bool {
	lower := strings.ToLower(name)
	for _, ext := range imgExtensions {
		if strings.HasSuffix(lower, ext) {
			return true
		}
	}
	return false
}

// imageFolderSchema is the schema of an ImageFolder import.
func imageFolderSchema() *snapshot.StructType {
	f := func(name, typ string) snapshot.StructField {
		return snapshot.StructField{Name: name, Type: &snapshot.PrimitiveType{Name: typ}}
	}
	return &snapshot.StructType{Fields: []snapshot.StructField{
		f("id", "long"), f("label", "string"), f("path", "string"), f("content", "binary"),
	}}
}

// ImageFolder reads a torchvision ImageFolder tree: root/<class>/**/<image>.
//
// Next returns the images in a pseudo-random order fixed by ShuffleSeed, not
// class by class: a mount splits a version into contiguous row ranges
// (--shards), and rows written class by class would give each shard only a
// few classes, so that per-shard ImageFolder class_to_idx would differ. The
// order depends only on the tree (the images in torchvision's order) and the
// seed, so the same tree always gets the same ids; the path column keeps
// each image's place in the tree.
//
// Every image is checked while the tree is listed, before any is read: it
// must be a regular file (after following symbolic links; a named pipe, a
// socket or a device fails the import, named) of at most
// Options.MaxFileSize bytes. Reads check again on the open file, never
// block, and stop when the context given to OpenImageFolder is done.
type ImageFolder struct {
	ctx     context.Context // bounds Next's reads
	root    string
	maxSize int64
	classes []string
	items   []imageItem // torchvision's order
	order   []int       // Next's order: a seeded permutation of items
	next    int
}

// ShuffleSeed seeds the order in which ImageFolder writes the images.
const ShuffleSeed = 0x64656c7461667321 // "deltafs!"

type imageItem struct {
	class string
	rel   string // relative to root, '/'-separated
}

// OpenImageFolder lists the tree at root (without reading any image),
// checking that every image is a regular file within opts.MaxFileSize. ctx
// bounds the listing and every later read of Next.
func OpenImageFolder(ctx context.Context, root string, opts Options) (*ImageFolder, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	d := &ImageFolder{ctx: ctx, root: root, maxSize: opts.maxFileSize()}
	for _, e := range entries {
		if isDir(filepath.Join(root, e.Name()), e) {
			d.classes = append(d.classes, e.Name())
		}
	}
	sort.Strings(d.classes)
	if len(d.classes) == 0 {
		return nil, fmt.Errorf("source %s: no class folder in it (an ImageFolder tree is root/<class>/<image>)", root)
	}
	var empty []string
	for _, class := range d.classes {
		n := len(d.items)
		if err := d.walkClass(ctx, class); err != nil {
			return nil, err
		}
		if len(d.items) == n {
			empty = append(empty, class)
		}
	}
	if len(empty) > 0 {
		return nil, fmt.Errorf("source %s: no image in class folder(s) %s (extensions: %s)", root, strings.Join(empty, ", "), strings.Join(imgExtensions, " "))
	}
	d.order = shuffledOrder(len(d.items), ShuffleSeed)
	return d, nil
}

// shuffledOrder is a permutation of 0..n-1 that depends only on n and seed:
// a Fisher-Yates shuffle driven by the raw output of a PCG generator (whose
// sequence is fixed by its definition, unlike rand.Shuffle's use of it).
func shuffledOrder(n int, seed uint64) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	pcg := rand.NewPCG(seed, seed)
	for i := n - 1; i > 0; i-- {
		j := int(pcg.Uint64() % uint64(i+1))
		order[i], order[j] = order[j], order[i]
	}
	return order
}

// isDir is os.DirEntry.IsDir following symbolic links, as Python's
// DirEntry.is_dir() does.
func isDir(path string, e os.DirEntry) bool {
	if e.Type()&os.ModeSymlink == 0 {
		return e.IsDir()
	}
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// walkClass lists the images of one class in torchvision's order:
// sorted(os.walk(class_dir, followlinks=True)), then sorted file names.
func (d *ImageFolder) walkClass(ctx context.Context, class string) error {
	type dir struct {
		rel   string
		files []string
	}
	var dirs []dir
	visited := map[string]bool{}
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		abs := filepath.Join(d.root, filepath.FromSlash(rel))
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			if visited[real] || depth > 64 {
				return nil // a symbolic link loop
			}
			visited[real] = true
		}
		entries, err := os.ReadDir(abs)
		if err != nil {
			return fmt.Errorf("source: %w", err)
		}
		cur := dir{rel: rel}
		var subs []string
		for _, e := range entries {
			if isDir(filepath.Join(abs, e.Name()), e) {
				subs = append(subs, e.Name())
			} else {
				cur.files = append(cur.files, e.Name())
			}
		}
		dirs = append(dirs, cur)
		for _, s := range subs {
			if err := walk(rel+"/"+s, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(class, 0); err != nil {
		return err
	}
	sort.Slice(dirs, func(i, j int) bool { return dirs[i].rel < dirs[j].rel })
	for _, dr := range dirs {
		sort.Strings(dr.files)
		for _, name := range dr.files {
			if !isImage(name) {
				continue // never opened, whatever its kind
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			rel := dr.rel + "/" + name
			if err := d.checkImage(rel); err != nil {
				return err
			}
			d.items = append(d.items, imageItem{class: class, rel: rel})
		}
	}
	return nil
}

// checkImage fails when the image at rel is not a regular file (after
// following symbolic links) or is larger than the bound, without opening
// it.
func (d *ImageFolder) checkImage(rel string) error {
	fi, err := storage.StatLocalFile(d.path(rel))
	if err != nil {
		return fmt.Errorf("source %s: %s: %w", d.root, rel, err)
	}
	if fi.Size() > d.maxSize {
		return fmt.Errorf("source %s: %s: %w: %d bytes, over the bound of %d", d.root, rel, storage.ErrTooLarge, fi.Size(), d.maxSize)
	}
	return nil
}

func (d *ImageFolder) path(rel string) string {
	return filepath.Join(d.root, filepath.FromSlash(rel))
}

// Schema is id, label, path, content.
func (d *ImageFolder) Schema() *snapshot.StructType { return imageFolderSchema() }

// IDColumn is "id": the writer numbers the images.
func (d *ImageFolder) IDColumn() string { return "id" }

// Classes are the class folder names, sorted.
func (d *ImageFolder) Classes() []string { return d.classes }

// Len is the number of images.
func (d *ImageFolder) Len() int { return len(d.items) }

// Next reads the next image, in the seeded shuffled order.
func (d *ImageFolder) Next() (writer.Row, error) {
	if d.next == len(d.items) {
		return nil, io.EOF
	}
	it := d.items[d.order[d.next]]
	content, err := storage.ReadLocalFile(d.ctx, d.path(it.rel), d.maxSize)
	if err != nil {
		if cerr := d.ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, fmt.Errorf("%s: %w", it.rel, err) // the importer names the source
	}
	d.next++
	return writer.Row{nil, it.class, it.rel, content}, nil
}

// Close does nothing: files are opened one at a time.
func (d *ImageFolder) Close() error { return nil }
