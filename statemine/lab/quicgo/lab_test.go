package quicgo

// The harness entry point. synctest only runs inside tests, so the runner is this
// package's test binary (go test -c): started as `harness CONFIG.json` (the runner
// protocol of docs/lab-protocol.md), TestMain re-executes it with the instrument
// patch's environment (STATEMINE_LOG, the threshold knobs; read once by quic-go at
// start-up) and runs TestLab, which runs the transfer in a synctest bubble.

import (
	"bufio"
	_ "embed"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"
)

//go:embed testdata/cert.pem
var certPEM []byte

//go:embed testdata/key.pem
var keyPEM []byte

// envConfig names the run config in the re-executed harness.
const envConfig = "STATEMINE_RUN_CONFIG"

func TestMain(m *testing.M) {
	if len(os.Args) == 2 && !strings.HasPrefix(os.Args[1], "-") {
		os.Exit(execRun(os.Args[1]))
	}
	os.Exit(m.Run())
}

// runEnv is the environment of the run of cfg: the current one with the patch's
// variables set from cfg.
func runEnv(cfg *Config, configPath string) []string {
	drop := map[string]bool{"STATEMINE_LOG": true, "STATEMINE_REORDERING_THRESHOLD": true,
		"STATEMINE_TIME_THRESHOLD": true, envConfig: true, "GOMAXPROCS": true, "GOGC": true,
		"GOMEMLIMIT": true, "QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING": true}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			env = append(env, kv)
		}
	}
	// One thread, and the garbage collector only near a memory limit: GC cycles are
	// paced by wall-clock time and reorder goroutines, so fewer of them make runs repeat
	// more exactly. quic-go warns that the in-memory connection has no socket buffers.
	env = append(env, "STATEMINE_LOG="+cfg.LogPath, envConfig+"="+configPath, "GOMAXPROCS=1",
		"GOGC=off", "GOMEMLIMIT=1GiB", "QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING=true")
	if cfg.ReorderingThreshold != nil {
		env = append(env, "STATEMINE_REORDERING_THRESHOLD="+strconv.Itoa(*cfg.ReorderingThreshold))
	}
	if cfg.TimeThreshold != nil {
		env = append(env, "STATEMINE_TIME_THRESHOLD="+strconv.FormatFloat(*cfg.TimeThreshold, 'g', -1, 64))
	}
	return env
}

// execRun validates the config, truncates the log and re-executes the binary to run
// TestLab; it returns only on error.
func execRun(configPath string) int {
	cfg, err := ReadConfig(configPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quicgo harness:", err)
		return 2
	}
	if err := os.WriteFile(cfg.LogPath, nil, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "quicgo harness:", err)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quicgo harness:", err)
		return 2
	}
	args := []string{os.Args[0], "-test.run=^TestLab$", "-test.count=1"}
	err = syscall.Exec(self, args, runEnv(cfg, configPath))
	fmt.Fprintln(os.Stderr, "quicgo harness: exec:", err)
	return 2
}

// countServerLosses counts the server's LossDetected events in the statemine log.
func countServerLosses(logPath string) (losses, lines int, err error) {
	f, err := os.Open(logPath)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "STATEMINE t=") {
			continue
		}
		lines++
		if strings.Contains(line, " role=server ") && strings.Contains(line, " event=LossDetected ") {
			losses++
		}
	}
	return losses, lines, sc.Err()
}

// TestLab runs the config named by $STATEMINE_RUN_CONFIG and writes its result.
func TestLab(t *testing.T) {
	configPath := os.Getenv(envConfig)
	if configPath == "" {
		t.Skip("runs only as the lab harness: harness CONFIG.json")
	}
	cfg, err := ReadConfig(configPath)
	if err != nil {
		t.Fatal(err)
	}
	res := Result{OK: true, Implementation: cfg.Implementation, Version: cfg.Version}
	serverTLS, clientTLS, err := TLSConfigs(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(1)
	cryptotest.SetGlobalRandom(t, uint64(cfg.Seed))
	wall := time.Now()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p, err := NewPath(cfg.Path.Down, cfg.Path.Up, cfg.Seed)
		if err != nil {
			res.Fail(err.Error())
			return
		}
		if cfg.Client.Profile == "mobile" {
			p.Client.SetMobile(cfg.Client.SocketBuffer(), NewCPUTime(cfg.Client.PerPacketCPU_S, cfg.Client.PerPacketCPUCV, cfg.Seed).Draw)
		}
		out, err := Transfer(cfg, p.Server, p.Client, serverTLS, clientTLS)
		p.Close()
		res.VirtualTimeS = time.Since(start).Seconds()
		res.PacketsSent = p.Sent()
		res.PacketsDropped = p.Dropped()
		res.Bytes = out.Received
		if err != nil {
			res.Fail(err.Error())
			return
		}
		res.PLT_S = out.PLT.Seconds()
		if res.PLT_S > 0 {
			res.ThroughputBps = 8 * float64(res.Bytes) / res.PLT_S
		}
	})
	res.WallTimeS = time.Since(wall).Seconds()
	losses, lines, err := countServerLosses(cfg.LogPath)
	switch {
	case err != nil:
		res.Fail("reading the statemine log: " + err.Error())
	case lines == 0 && res.OK:
		res.Fail("no statemine lines in the log: is quic-go built with the instrument patch?")
	}
	res.Retransmissions = losses
	if err := WriteJSON(cfg.ResultPath, res); err != nil {
		t.Fatal(err)
	}
}

// TestLoopback runs a small transfer in real time over UDP on 127.0.0.1 when
// $STATEMINE_LOOPBACK is set (the patched quic-go outside the emulation; the statemine
// log goes to $STATEMINE_LOG as usual).
func TestLoopback(t *testing.T) {
	if os.Getenv("STATEMINE_LOOPBACK") == "" {
		t.Skip("set STATEMINE_LOOPBACK=1 to run a real transfer over UDP loopback")
	}
	cfg := &Config{Objects: Objects{Count: 3, SizeBytes: 300_000}, Client: Client{Profile: "desktop"}, TimeLimitS: 30}
	serverTLS, clientTLS, err := TLSConfigs(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	listen := func() net.PacketConn {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	out, err := Transfer(cfg, listen(), listen(), serverTLS, clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	if out.Received != 900_000 || out.PLT <= 0 {
		t.Fatalf("received %d bytes in %v", out.Received, out.PLT)
	}
}

// TestRealNet runs the config named by $STATEMINE_RUN_CONFIG in real time over two UDP
// sockets the caller made and passed as inherited file descriptors
// $STATEMINE_REALNET_FDS = "SERVER,CLIENT" (statemine/lab/realtime: one socket in each
// network namespace, joined by the real-time path). The statemine log gets real
// timestamps; the result has no path counters (the emulator keeps them).
func TestRealNet(t *testing.T) {
	fds := os.Getenv("STATEMINE_REALNET_FDS")
	configPath := os.Getenv(envConfig)
	if fds == "" || configPath == "" {
		t.Skip("runs only for the real-time lab (statemine/lab/realtime/quicgo.py)")
	}
	cfg, err := ReadConfig(configPath)
	if err != nil {
		t.Fatal(err)
	}
	res := Result{OK: true, Implementation: cfg.Implementation, Version: cfg.Version}
	serverTLS, clientTLS, err := TLSConfigs(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(s string) net.PacketConn {
		fd, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.FilePacketConn(os.NewFile(uintptr(fd), "udp"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	serverFd, clientFd, _ := strings.Cut(fds, ",")
	wall := time.Now()
	out, err := Transfer(cfg, conn(serverFd), conn(clientFd), serverTLS, clientTLS)
	res.WallTimeS = time.Since(wall).Seconds()
	res.VirtualTimeS = res.WallTimeS
	res.Bytes = out.Received
	if err != nil {
		res.Fail(err.Error())
	} else {
		res.PLT_S = out.PLT.Seconds()
		if res.PLT_S > 0 {
			res.ThroughputBps = 8 * float64(res.Bytes) / res.PLT_S
		}
	}
	losses, _, err := countServerLosses(cfg.LogPath)
	if err != nil {
		res.Fail("reading the statemine log: " + err.Error())
	}
	res.Retransmissions = losses
	if err := WriteJSON(cfg.ResultPath, res); err != nil {
		t.Fatal(err)
	}
}
