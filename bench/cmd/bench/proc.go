package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one contender process: started in its own process group, its
// output in files, its CPU time and peak memory read from /proc while it
// runs and from wait4's rusage when it ends.
type proc struct {
	name    string
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{}
	err     error // set before exited is closed
	out     *os.File
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

func start(name, logPath string, env []string, argv ...string) (*proc, error) {
	out, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{}), out: out}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// usage is the CPU time and peak resident memory of a process so far.
type usage struct {
	CPU     time.Duration
	PeakRSS int64 // bytes
}

// sample reads the process's CPU time (user+system, its threads and
// waited-for children) and VmHWM from /proc; after exit, from rusage.
func (p *proc) sample() (usage, error) {
	if !p.alive() {
		return p.rusage(), nil
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid()))
	if err != nil {
		if !p.alive() {
			return p.rusage(), nil
		}
		return usage{}, err
	}
	// The command name (field 2) may hold spaces: split after its ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return usage{}, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); utime, stime, cutime, cstime are fields 14-17.
	var ticks int64
	for _, k := range []int{11, 12, 13, 14} {
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			return usage{}, fmt.Errorf("parse /proc stat: %w", err)
		}
		ticks += v
	}
	u := usage{CPU: time.Duration(ticks) * time.Second / clockTicks}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
	if err != nil {
		return u, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			u.PeakRSS = kb << 10
		}
	}
	if u.PeakRSS == 0 {
		// A zombie (exited, not yet reaped) has no VmHWM: take rusage.
		if p.wait(2 * time.Second) {
			return p.rusage(), nil
		}
	}
	return u, nil
}

func (p *proc) rusage() usage {
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return usage{}
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return usage{CPU: cpu, PeakRSS: ru.Maxrss << 10}
}

// signal sends sig to the process.
func (p *proc) signal(sig syscall.Signal) {
	if p.alive() {
		_ = p.cmd.Process.Signal(sig)
	}
}

// wait waits up to d for the process to exit; false if it did not.
func (p *proc) wait(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs the process group.
// It returns whether the process exited by itself within grace.
func (p *proc) stop(grace time.Duration) bool {
	p.signal(syscall.SIGTERM)
	if p.wait(grace) {
		return true
	}
	p.kill()
	return false
}

// kill SIGKILLs the process group and waits for the process to be reaped.
func (p *proc) kill() {
	if p.alive() {
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	}
	<-p.exited
}

// cpuBusy returns the machine's busy CPU time so far (every state of
// /proc/stat's cpu line but idle and iowait), to tell how much else ran
// beside a contender.
func cpuBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var ticks int64
	// user nice system idle iowait irq softirq steal guest guest_nice:
	// guest time is already counted in user and nice.
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		if i < len(f) {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += v
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// pidCPU is the CPU time of another process (the broker), 0 if unknown.
func pidCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	var ticks int64
	for _, k := range []int{11, 12} {
		v, _ := strconv.ParseInt(f[k], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks
}
