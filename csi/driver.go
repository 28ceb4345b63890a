package csi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/deltafs/deltafs/fusefs"
)

// Name is the plugin's name, the CSIDriver object's.
const Name = "deltafs.csi.deltafs.io"

// Config configures a Driver.
type Config struct {
	NodeID   string
	StateDir string // records, caches and secret files, one directory per mount
	Binary   string // the deltafs binary that runs each mount
	Version  string
	Logger   *slog.Logger
	// Ready bounds how long a mount may take to appear (0: 2 minutes).
	Ready time.Duration
}

// Driver serves the Identity, Controller and Node services.
type Driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	cfg Config
	ms  *mounts

	volMu sync.Mutex // the controller's volumes file
	pubMu sync.Mutex // one publish or unpublish at a time per node
}

// New returns a driver; it adopts the mounts a previous run left in
// cfg.StateDir.
func New(cfg Config) (*Driver, error) {
	if cfg.NodeID == "" {
		return nil, errors.New("csi: a node id is needed (--node-id)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Ready <= 0 {
		cfg.Ready = 2 * time.Minute
	}
	if err := os.MkdirAll(filepath.Join(cfg.StateDir, "mounts"), 0o700); err != nil {
		return nil, fmt.Errorf("csi: state directory %s: %v", cfg.StateDir, err)
	}
	d := &Driver{cfg: cfg, ms: &mounts{dir: filepath.Join(cfg.StateDir, "mounts"), binary: cfg.Binary, log: cfg.Logger, ready: cfg.Ready, byTarget: map[string]*mount{}}}
	d.ms.adopt()
	return d, nil
}

// Serve serves the driver at endpoint (unix:///path/csi.sock) until ctx
// ends.
func (d *Driver) Serve(ctx context.Context, endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "unix" || u.Path == "" {
		return fmt.Errorf("csi: endpoint %q: want unix:///path/to/csi.sock", endpoint)
	}
	if err := os.Remove(u.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("csi: endpoint %s: %v", u.Path, err)
	}
	if err := os.MkdirAll(filepath.Dir(u.Path), 0o755); err != nil {
		return fmt.Errorf("csi: endpoint %s: %v", u.Path, err)
	}
	l, err := net.Listen("unix", u.Path)
	if err != nil {
		return fmt.Errorf("csi: endpoint %s: %v", u.Path, err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(d.logCalls))
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterControllerServer(srv, d)
	csi.RegisterNodeServer(srv, d)
	go func() { <-ctx.Done(); srv.GracefulStop() }()
	d.cfg.Logger.Info("csi: serving", "endpoint", endpoint, "node", d.cfg.NodeID, "state", d.cfg.StateDir)
	return srv.Serve(l)
}

// logCalls logs each call's method and outcome, never its secrets.
func (d *Driver) logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if err != nil {
		d.cfg.Logger.Info("csi: call failed", "method", info.FullMethod, "code", status.Code(err).String(), "error", status.Convert(err).Message())
	} else {
		d.cfg.Logger.Debug("csi: call", "method", info.FullMethod)
	}
	return resp, err
}

// Identity.

func (d *Driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: Name, VendorVersion: d.cfg.Version}, nil
}

func (d *Driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}},
	}}}, nil
}

func (d *Driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

// Controller: a volume is a view of a table; nothing is allocated.

// volumeRec is a created volume, kept in the state directory.
type volumeRec struct {
	ID         string            `json:"id"`
	Parameters map[string]string `json:"parameters"`
	Capacity   int64             `json:"capacity"`
}

func (d *Driver) volumesPath() string { return filepath.Join(d.cfg.StateDir, "volumes.json") }

func (d *Driver) loadVolumes() map[string]volumeRec {
	vols := map[string]volumeRec{}
	if b, err := os.ReadFile(d.volumesPath()); err == nil {
		_ = json.Unmarshal(b, &vols)
	}
	return vols
}

func (d *Driver) saveVolumes(vols map[string]volumeRec) error {
	b, _ := json.Marshal(vols)
	tmp := d.volumesPath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, d.volumesPath())
}

func (d *Driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{{
		Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}},
	}}}, nil
}

func (d *Driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "no volume name")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no volume capabilities")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if req.GetVolumeContentSource() != nil {
		return nil, status.Error(codes.InvalidArgument, "a deltafs volume is a view of a table: it has no content source")
	}
	// The parameters must make a mount (the secrets come at publish).
	if _, err := newMountSpec(req.GetParameters(), nil, "/target", "/state"); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	capacity := req.GetCapacityRange().GetRequiredBytes()
	if lim := req.GetCapacityRange().GetLimitBytes(); lim > 0 && capacity > lim {
		return nil, status.Error(codes.OutOfRange, "the required capacity is above the limit")
	}
	sum := sha256.Sum256([]byte(req.GetName()))
	id := "deltafs-" + hex.EncodeToString(sum[:16])
	d.volMu.Lock()
	defer d.volMu.Unlock()
	vols := d.loadVolumes()
	if v, ok := vols[id]; ok {
		if !sameMap(v.Parameters, req.GetParameters()) || v.Capacity != capacity {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q exists with other parameters or capacity", req.GetName())
		}
	} else {
		vols[id] = volumeRec{ID: id, Parameters: req.GetParameters(), Capacity: capacity}
		if err := d.saveVolumes(vols); err != nil {
			return nil, status.Errorf(codes.Internal, "recording the volume: %v", err)
		}
	}
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: id, CapacityBytes: capacity, VolumeContext: req.GetParameters()}}, nil
}

func (d *Driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "no volume id")
	}
	d.volMu.Lock()
	defer d.volMu.Unlock()
	vols := d.loadVolumes()
	if _, ok := vols[req.GetVolumeId()]; ok {
		delete(vols, req.GetVolumeId())
		if err := d.saveVolumes(vols); err != nil {
			return nil, status.Errorf(codes.Internal, "forgetting the volume: %v", err)
		}
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *Driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "no volume id")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no volume capabilities")
	}
	d.volMu.Lock()
	_, ok := d.loadVolumes()[req.GetVolumeId()]
	d.volMu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no volume %q", req.GetVolumeId())
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters(),
	}}, nil
}

// checkCapabilities accepts filesystem volumes of any access mode: the
// mount is read-only whatever the mode (writes fail with EROFS).
func checkCapabilities(caps []*csi.VolumeCapability) error {
	for _, c := range caps {
		if c.GetBlock() != nil {
			return errors.New("deltafs serves filesystem volumes, not block volumes")
		}
		if c.GetMount() == nil {
			return errors.New("a volume capability without an access type (mount)")
		}
		if fs := c.GetMount().GetFsType(); fs != "" && fs != "fuse" && fs != "deltafs" && fs != "fuse.deltafs" {
			return fmt.Errorf("fsType %q: deltafs volumes are fuse.deltafs", fs)
		}
	}
	return nil
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Node.

func (d *Driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.cfg.NodeID}, nil
}

func (d *Driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

func (d *Driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "no volume id")
	case req.GetTargetPath() == "":
		return nil, status.Error(codes.InvalidArgument, "no target path")
	case req.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "no volume capability")
	case !filepath.IsAbs(req.GetTargetPath()):
		return nil, status.Error(codes.InvalidArgument, "the target path is not absolute")
	}
	if err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	target := filepath.Clean(req.GetTargetPath())
	spec, err := newMountSpec(req.GetVolumeContext(), req.GetSecrets(), target, d.ms.volumeDir(target))
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	d.pubMu.Lock()
	defer d.pubMu.Unlock()
	d.ms.mu.Lock()
	m := d.ms.byTarget[target]
	d.ms.mu.Unlock()
	if m != nil {
		select {
		case <-m.exited:
			m = nil // died: remade below
		default:
		}
	}
	if m != nil {
		if m.rec.VolumeID != req.GetVolumeId() || m.rec.Digest != spec.digest() {
			return nil, status.Errorf(codes.AlreadyExists, "target %s is published with another volume or other attributes", target)
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	// A mount point left by a dead server (ENOTCONN) is detached first.
	detach(target)
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "target %s: %v", target, err)
	}
	m, err = d.ms.start(req.GetVolumeId(), target, spec)
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s: %v", req.GetVolumeId(), err)
	}
	d.ms.mu.Lock()
	d.ms.byTarget[target] = m
	d.ms.mu.Unlock()
	d.cfg.Logger.Info("csi: published", "volume", req.GetVolumeId(), "target", target, "table", redactTable(req.GetVolumeContext()["table"]), "pid", m.rec.PID)
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *Driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "no volume id")
	case req.GetTargetPath() == "":
		return nil, status.Error(codes.InvalidArgument, "no target path")
	}
	target := filepath.Clean(req.GetTargetPath())
	d.pubMu.Lock()
	defer d.pubMu.Unlock()
	d.ms.mu.Lock()
	m := d.ms.byTarget[target]
	delete(d.ms.byTarget, target)
	d.ms.mu.Unlock()
	if m != nil {
		d.ms.stop(m)
	} else {
		detach(target)
		_ = os.RemoveAll(d.ms.volumeDir(target))
	}
	if fusefs.Mounted(target) {
		return nil, status.Errorf(codes.Internal, "target %s is still mounted (not by deltafs?)", target)
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "removing target %s: %v", target, err)
	}
	d.cfg.Logger.Info("csi: unpublished", "volume", req.GetVolumeId(), "target", target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// redactTable is a table's location for a log line, without a query or
// user information (a pre-signed or SAS URL keeps its secret there).
func redactTable(t string) string {
	if i := strings.IndexAny(t, "?@"); i >= 0 {
		return t[:i] + "..."
	}
	return t
}
