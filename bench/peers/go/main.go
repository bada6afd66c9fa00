// Command peers is the Go peer of pcml's benchmark suite (see ../README.md): goroutines and
// unbuffered channels. The first argument names the program:
//
//	spawn N          start a trivial goroutine and wait for it, N times in sequence
//	pingpong N       two goroutines bounce N messages (N/2 round trips) over two channels
//	parpingpong N    8 independent ping-pong pairs at once, N messages in all
//	primes N         first N primes by a chain of filter goroutines (the concurrent sieve)
//	skynet L [B]     a tree of goroutines, B children per node (default 10), L leaves; the
//	                 leaves' numbers are summed up the tree
//	workerpool N     4 worker goroutines take N jobs from a buffered channel (capacity 64)
//	                 with `for j := range jobs` and send results on another; the producer
//	                 closes jobs, a WaitGroup closes results, main sums the results
//
// Each prints one line on stdout:
//
//	RESULT program=<name> n=<N> seconds=<float> check=<ok|FAIL> <key=value...>
//
// and exits 1 when the check fails (2 on bad arguments). The number of procs is GOMAXPROCS,
// set by the caller in the environment. Times come from time.Now/time.Since, which use the
// monotonic clock, and cover the work only.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// pairs is the number of independent pairs of parpingpong.
const pairs = 8

// report prints the RESULT line and returns ok.
func report(program string, n int, elapsed time.Duration, ok bool, extras ...string) bool {
	check := "FAIL"
	if ok {
		check = "ok"
	}
	fields := []string{
		"RESULT",
		"program=" + program,
		"n=" + strconv.Itoa(n),
		fmt.Sprintf("seconds=%.6f", elapsed.Seconds()),
		"check=" + check,
	}
	fields = append(fields, extras...)
	fields = append(fields, "peer=go", "procs="+strconv.Itoa(runtime.GOMAXPROCS(0)))
	fmt.Println(strings.Join(fields, " "))
	return ok
}

func rate(count int, elapsed time.Duration) string {
	s := elapsed.Seconds()
	if s <= 0 {
		return "rate=inf"
	}
	return fmt.Sprintf("rate=%.1f", float64(count)/s)
}

// ---- spawn ----

// spawnChild is the trivial goroutine: it hands its index back on done.
func spawnChild(i int, done chan<- int) {
	done <- i
}

func spawnBench(n int) bool {
	done := make(chan int)
	joined := 0
	start := time.Now()
	for i := 0; i < n; i++ {
		go spawnChild(i, done)
		if <-done == i {
			joined++
		}
	}
	elapsed := time.Since(start)
	return report("spawn", n, elapsed, joined == n,
		"threads="+strconv.Itoa(joined), rate(n, elapsed), "unit=threads/s")
}

// ---- ping-pong ----

// ponger answers every x with x+1 until in is closed.
func ponger(in <-chan int, out chan<- int) {
	for x := range in {
		out <- x + 1
	}
}

// pinger does rounds round trips starting from 0 and returns the last answer, which is
// rounds when nothing was lost. It closes out when done, which ends the ponger.
func pinger(out chan<- int, in <-chan int, rounds int) int {
	x := 0
	for i := 0; i < rounds; i++ {
		out <- x
		x = <-in
	}
	close(out)
	return x
}

func pingpongBench(n int) bool {
	rounds := n / 2
	ping, pong := make(chan int), make(chan int)
	start := time.Now()
	go ponger(ping, pong)
	last := pinger(ping, pong, rounds)
	elapsed := time.Since(start)
	msgs := 2 * rounds
	return report("pingpong", n, elapsed, last == rounds,
		"msgs="+strconv.Itoa(msgs), rate(msgs, elapsed), "unit=msgs/s")
}

// ---- parallel ping-pong ----

func parPingpongBench(n int) bool {
	rounds := n / (2 * pairs)
	done := make(chan int)
	start := time.Now()
	for k := 0; k < pairs; k++ {
		ping, pong := make(chan int), make(chan int)
		go ponger(ping, pong)
		go func() { done <- pinger(ping, pong, rounds) }()
	}
	good := 0
	for k := 0; k < pairs; k++ {
		if <-done == rounds {
			good++
		}
	}
	elapsed := time.Since(start)
	msgs := 2 * pairs * rounds
	return report("parpingpong", n, elapsed, good == pairs,
		"pairs="+strconv.Itoa(pairs), "msgs="+strconv.Itoa(msgs), rate(msgs, elapsed),
		"unit=msgs/s")
}

// ---- primes ----

// generate sends 2, 3, 4, ... on out, forever. Like the filters, it ends up blocked once the
// main goroutine stops reading, and is dropped when the process exits.
func generate(out chan<- int) {
	for i := 2; ; i++ {
		out <- i
	}
}

// filter passes on the numbers of in that p does not divide.
func filter(p int, in <-chan int, out chan<- int) {
	for {
		x := <-in
		if x%p != 0 {
			out <- x
		}
	}
}

// sieve finds the first n primes with a generator and one filter per prime but the last
// (n goroutines in all), and returns the nth prime and the sum.
func sieve(n int) (nth, sum int) {
	ch := make(chan int)
	go generate(ch)
	for k := 0; k < n; k++ {
		p := <-ch
		nth = p
		sum += p
		if k+1 < n {
			out := make(chan int)
			go filter(p, ch, out)
			ch = out
		}
	}
	return nth, sum
}

// referencePrimes is the check, by trial division, outside the timed region.
func referencePrimes(n int) (nth, sum int) {
	found := make([]int, 0, n)
	for x := 2; len(found) < n; x++ {
		prime := true
		for _, p := range found {
			if p*p > x {
				break
			}
			if x%p == 0 {
				prime = false
				break
			}
		}
		if prime {
			found = append(found, x)
			sum += x
			nth = x
		}
	}
	return nth, sum
}

func primesBench(n int) bool {
	start := time.Now()
	nth, sum := sieve(n)
	elapsed := time.Since(start)
	refNth, refSum := referencePrimes(n)
	ok := nth == refNth && sum == refSum && (n != 2000 || nth == 17389)
	return report("primes", n, elapsed, ok,
		"nth="+strconv.Itoa(nth), "sum="+strconv.Itoa(sum), "threads="+strconv.Itoa(n))
}

// ---- skynet ----

// skynetNode covers the leaves [num, num+size): a leaf sends its number; an inner node starts
// min(branch, size) children over near-equal slices and sends the sum of their answers.
func skynetNode(num, size, branch int, parent chan<- int64) {
	if size == 1 {
		parent <- int64(num)
		return
	}
	ch := make(chan int64)
	q, r := size/branch, size%branch
	kids := 0
	start := num
	for i := 0; i < branch; i++ {
		s := q
		if i < r {
			s++
		}
		if s > 0 {
			go skynetNode(start, s, branch, ch)
			kids++
		}
		start += s
	}
	var sum int64
	for ; kids > 0; kids-- {
		sum += <-ch
	}
	parent <- sum
}

// skynetThreads counts the nodes of the tree, outside the timed region.
func skynetThreads(size, branch int) int {
	if size == 1 {
		return 1
	}
	total := 1
	q, r := size/branch, size%branch
	for i := 0; i < branch; i++ {
		s := q
		if i < r {
			s++
		}
		if s > 0 {
			total += skynetThreads(s, branch)
		}
	}
	return total
}

func skynetBench(leaves, branch int) bool {
	top := make(chan int64)
	start := time.Now()
	go skynetNode(0, leaves, branch, top)
	sum := <-top
	elapsed := time.Since(start)
	l := int64(leaves)
	ok := sum == l*(l-1)/2
	return report("skynet", leaves, elapsed, ok,
		"branch="+strconv.Itoa(branch), "sum="+strconv.FormatInt(sum, 10),
		"threads="+strconv.Itoa(skynetThreads(leaves, branch)))
}

// ---- worker pool ----

// poolWorkers and poolBuffer are the worker pool's shape (the same in pcml's program).
const (
	poolWorkers = 4
	poolBuffer  = 64
)

func workerpoolBench(n int) bool {
	start := time.Now()
	jobs := make(chan int, poolBuffer)
	results := make(chan int, poolBuffer)
	var wg sync.WaitGroup
	for w := 0; w < poolWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				results <- 2 * j
			}
		}()
	}
	go func() {
		for j := 0; j < n; j++ {
			jobs <- j
		}
		close(jobs)
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	sum, count := 0, 0
	for r := range results {
		sum += r
		count++
	}
	elapsed := time.Since(start)
	ok := count == n && sum == n*(n-1)
	return report("workerpool", n, elapsed, ok,
		"jobs="+strconv.Itoa(count), "workers="+strconv.Itoa(poolWorkers), rate(n, elapsed),
		"unit=jobs/s")
}

// ---- command line ----

func usage() {
	fmt.Fprintln(os.Stderr,
		"usage: peers (spawn|pingpong|parpingpong|primes|workerpool) N | skynet LEAVES [BRANCH]")
	os.Exit(2)
}

func posInt(s string) int {
	i, err := strconv.Atoi(s)
	if err != nil || i <= 0 {
		usage()
	}
	return i
}

func main() {
	args := os.Args[1:]
	if len(args) < 2 {
		usage()
	}
	n := posInt(args[1])
	var ok bool
	switch {
	case args[0] == "skynet" && len(args) <= 3:
		branch := 10
		if len(args) == 3 {
			branch = posInt(args[2])
		}
		if branch < 2 {
			usage()
		}
		ok = skynetBench(n, branch)
	case len(args) != 2:
		usage()
	case args[0] == "spawn":
		ok = spawnBench(n)
	case args[0] == "pingpong":
		ok = pingpongBench(n)
	case args[0] == "parpingpong":
		ok = parPingpongBench(n)
	case args[0] == "primes":
		ok = primesBench(n)
	case args[0] == "workerpool":
		ok = workerpoolBench(n)
	default:
		usage()
	}
	if !ok {
		os.Exit(1)
	}
}
