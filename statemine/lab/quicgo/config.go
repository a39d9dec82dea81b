package quicgo

// The run config and run result of docs/lab-protocol.md.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// Objects is what the client requests: Count objects of SizeBytes each.
type Objects struct {
	Count     int `json:"count"`
	SizeBytes int `json:"size_bytes"`
}

// Client is the client profile.
type Client struct {
	Profile        string   `json:"profile"`          // "desktop" or "mobile"
	ReadRateBps    *float64 `json:"read_rate_bps"`    // mobile: application read rate, bits/s
	PerPacketCPU_S float64  `json:"per_packet_cpu_s"` // mobile: mean virtual CPU seconds per received packet
	// mobile: coefficient of variation of the (lognormal) per-packet CPU time (0: constant)
	PerPacketCPUCV float64 `json:"per_packet_cpu_cv"`
	// mobile: coefficient of variation of the read rate, redrawn every ReadRateIntervalS
	ReadRateCV        float64 `json:"read_rate_cv"`
	ReadRateIntervalS float64 `json:"read_rate_interval_s"`
	// mobile: the socket receive buffer, bytes (nil: DefaultSocketBuffer)
	SocketBufferBytes *int `json:"socket_buffer_bytes"`
	// the client's initial connection / stream flow-control windows, bytes (nil: quic-go's)
	MaxDataBytes       *int64 `json:"max_data_bytes"`
	MaxStreamDataBytes *int64 `json:"max_stream_data_bytes"`
}

// DefaultSocketBuffer is the mobile client's socket receive buffer unless the config
// sets one: Linux's rmem_default, bytes.
const DefaultSocketBuffer = 212992

// SocketBuffer is the client's receive buffer in bytes (0: unlimited, the desktop profile).
func (c *Client) SocketBuffer() int {
	switch {
	case c.Profile != "mobile":
		return 0
	case c.SocketBufferBytes != nil:
		return *c.SocketBufferBytes
	}
	return DefaultSocketBuffer
}

// Config is one run.
type Config struct {
	Seed                int64    `json:"seed"`
	Implementation      string   `json:"implementation"`
	Version             string   `json:"version"`
	Objects             Objects  `json:"objects"`
	Client              Client   `json:"client"`
	Path                PathPair `json:"path"`
	ReorderingThreshold *int     `json:"reordering_threshold"`
	TimeThreshold       *float64 `json:"time_threshold"`
	TimeLimitS          float64  `json:"time_limit_s"`
	LogPath             string   `json:"log_path"`
	ResultPath          string   `json:"result_path"`
}

// PathPair is both directions: Down is server -> client, Up is client -> server.
type PathPair struct {
	Down LinkConfig `json:"down"`
	Up   LinkConfig `json:"up"`
}

// ReadConfig parses and validates the run config at path.
func ReadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: not a run config: %v", path, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &c, nil
}

// Validate reports the first impossible value, naming its key.
func (c *Config) Validate() error {
	switch {
	case c.Objects.Count < 1:
		return fmt.Errorf("objects.count: must be >= 1, not %d", c.Objects.Count)
	case c.Objects.SizeBytes < 1:
		return fmt.Errorf("objects.size_bytes: must be >= 1, not %d", c.Objects.SizeBytes)
	case c.Client.Profile != "desktop" && c.Client.Profile != "mobile":
		return fmt.Errorf("client.profile: must be desktop or mobile, not %q", c.Client.Profile)
	case c.Client.Profile == "mobile" && (c.Client.ReadRateBps == nil || !(*c.Client.ReadRateBps > 0) || math.IsInf(*c.Client.ReadRateBps, 0)):
		return fmt.Errorf("client.read_rate_bps: the mobile profile needs a rate > 0")
	case !(c.Client.PerPacketCPU_S >= 0) || c.Client.PerPacketCPU_S > 1:
		return fmt.Errorf("client.per_packet_cpu_s: must be in [0, 1], not %v", c.Client.PerPacketCPU_S)
	case !(c.Client.PerPacketCPUCV >= 0 && c.Client.PerPacketCPUCV <= 10):
		return fmt.Errorf("client.per_packet_cpu_cv: must be in [0, 10], not %v", c.Client.PerPacketCPUCV)
	case !(c.Client.ReadRateCV >= 0 && c.Client.ReadRateCV <= 10):
		return fmt.Errorf("client.read_rate_cv: must be in [0, 10], not %v", c.Client.ReadRateCV)
	case c.Client.ReadRateCV > 0 && !(c.Client.ReadRateIntervalS > 0 && c.Client.ReadRateIntervalS <= 3600):
		return fmt.Errorf("client.read_rate_interval_s: must be in (0, 3600] with read_rate_cv, not %v", c.Client.ReadRateIntervalS)
	case c.ReorderingThreshold != nil && (*c.ReorderingThreshold < 1 || *c.ReorderingThreshold > 65535):
		return fmt.Errorf("reordering_threshold: must be an integer in [1, 65535]")
	case c.TimeThreshold != nil && !(*c.TimeThreshold >= 1 && *c.TimeThreshold <= 32):
		return fmt.Errorf("time_threshold: must be in [1, 32]")
	case c.Client.SocketBufferBytes != nil && *c.Client.SocketBufferBytes < 1:
		return fmt.Errorf("client.socket_buffer_bytes: must be >= 1")
	case c.Client.MaxDataBytes != nil && *c.Client.MaxDataBytes < 1:
		return fmt.Errorf("client.max_data_bytes: must be >= 1")
	case c.Client.MaxStreamDataBytes != nil && *c.Client.MaxStreamDataBytes < 1:
		return fmt.Errorf("client.max_stream_data_bytes: must be >= 1")
	case !(c.TimeLimitS > 0) || math.IsInf(c.TimeLimitS, 0):
		return fmt.Errorf("time_limit_s: must be > 0, not %v", c.TimeLimitS)
	case c.LogPath == "" || c.ResultPath == "":
		return fmt.Errorf("log_path and result_path are required")
	}
	if err := c.Path.Down.Validate(); err != nil {
		return fmt.Errorf("path.down.%v", err)
	}
	if err := c.Path.Up.Validate(); err != nil {
		return fmt.Errorf("path.up.%v", err)
	}
	return nil
}

// Result is the run result.
type Result struct {
	OK              bool    `json:"ok"`
	Error           *string `json:"error"`
	PLT_S           float64 `json:"plt_s"`
	Bytes           int64   `json:"bytes"`
	ThroughputBps   float64 `json:"throughput_bps"`
	Retransmissions int     `json:"retransmissions"`
	PacketsSent     int     `json:"packets_sent"`
	PacketsDropped  int     `json:"packets_dropped"`
	VirtualTimeS    float64 `json:"virtual_time_s"`
	WallTimeS       float64 `json:"wall_time_s"`
	Implementation  string  `json:"implementation"`
	Version         string  `json:"version"`
}

// Fail marks the result failed with message msg.
func (r *Result) Fail(msg string) {
	r.OK = false
	r.Error = &msg
}

// WriteJSON writes v to path atomically (a temporary file in the same directory, then rename).
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".result-*.tmp")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
