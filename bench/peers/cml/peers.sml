(* peers.sml
 *
 * The SML/NJ CML peer of pcml's benchmark suite (see ../README.md). One heap image runs every
 * program; the first command-line argument names the program:
 *
 *   spawn N          spawn a trivial thread and join it, N times in sequence
 *   pingpong N       two threads bounce N messages (N div 2 round trips) over two channels
 *   parpingpong N    8 independent ping-pong pairs at once, N messages in all
 *   primes N         first N primes by a chain of filter threads (the concurrent sieve)
 *   skynet L B       a tree of threads, B children per node, L leaves; the leaves' numbers
 *                    are summed up the tree
 *
 * Each prints one line on stdout:
 *
 *   RESULT program=<name> n=<N> seconds=<float> check=<ok|FAIL> <key=value...>
 *
 * and exits with failure when the check fails.
 *
 * Clock: SML/NJ 110.79 exposes no monotonic clock, so the time is Time.now (gettimeofday,
 * microseconds). The measured interval is the work only, inside RunCML.doit, after argument
 * parsing and before the answer is checked. CML here runs on one proc.
 *)

structure PeerBench : sig

    val main : string * string list -> OS.Process.status

  end = struct

    val peer = "cml"

    (* ---- output ---- *)

    fun intStr (i : int) = if i < 0 then "-" ^ Int.toString (~ i) else Int.toString i
    fun int64Str (i : Int64.int) =
	  if i < 0 then "-" ^ Int64.toString (Int64.~ i) else Int64.toString i
    fun realStr (digits, r : real) =
	  if r < 0.0 then "-" ^ Real.fmt (StringCvt.FIX (SOME digits)) (~ r)
	  else Real.fmt (StringCvt.FIX (SOME digits)) r

    (* one kv pair *)
    fun kv (k, v) = k ^ "=" ^ v

    fun report {program, n, seconds, ok, extras} = let
	  val line = String.concatWith " " ([
		  "RESULT",
		  kv ("program", program),
		  kv ("n", intStr n),
		  kv ("seconds", realStr (6, seconds)),
		  kv ("check", if ok then "ok" else "FAIL")
		] @ List.map kv extras @ [kv ("peer", peer), kv ("procs", "1")])
	  in
	    TextIO.output (TextIO.stdOut, line ^ "\n");
	    TextIO.flushOut TextIO.stdOut
	  end

    fun rate (count, seconds) = if seconds > 0.0 then realStr (1, real count / seconds) else "inf"

    (* ---- timing ---- *)

    (* run f () and return its result with the elapsed seconds *)
    fun timed f = let
	  val t0 = Time.now ()
	  val x = f ()
	  val t1 = Time.now ()
	  in
	    (x, Time.toReal (Time.- (t1, t0)))
	  end

    (* ---- spawn ---- *)

    (* Spawn a thread that bumps a counter, and wait on its join event, n times. *)
    fun spawnBench n = let
	  val count = ref 0
	  fun child () = count := !count + 1
	  fun loop 0 = ()
	    | loop i = (CML.sync (CML.joinEvt (CML.spawn child)); loop (i - 1))
	  val ((), secs) = timed (fn () => loop n)
	  in
	    report {
		program = "spawn", n = n, seconds = secs, ok = (!count = n),
		extras = [("threads", intStr (!count)), ("rate", rate (n, secs)),
		          ("unit", "threads/s")]
	      };
	    !count = n
	  end

    (* ---- ping-pong ---- *)

    (* The ponger answers every x with x+1, forever (it is dropped at shutdown). *)
    fun ponger (inCh, outCh) = let
	  fun loop () = (CML.send (outCh, CML.recv inCh + 1); loop ())
	  in
	    loop ()
	  end

    (* The pinger does `rounds` round trips starting from 0, and returns the last answer,
     * which is `rounds` when nothing was lost. *)
    fun pinger (outCh, inCh, rounds) = let
	  fun loop (i, x) = if i = rounds
		then x
		else (CML.send (outCh, x); loop (i + 1, CML.recv inCh))
	  in
	    loop (0, 0)
	  end

    fun pingpongBench n = let
	  val rounds = n div 2
	  val ping = CML.channel () and pong = CML.channel ()
	  fun run () = (
		CML.spawn (fn () => ponger (ping, pong));
		pinger (ping, pong, rounds))
	  val (last, secs) = timed run
	  val msgs = 2 * rounds
	  val ok = (last = rounds)
	  in
	    report {
		program = "pingpong", n = n, seconds = secs, ok = ok,
		extras = [("msgs", intStr msgs), ("rate", rate (msgs, secs)), ("unit", "msgs/s")]
	      };
	    ok
	  end

    (* ---- parallel ping-pong ---- *)

    val pairs = 8

    fun parPingpongBench n = let
	  val rounds = n div (2 * pairs)
	  val done = CML.channel ()
	  fun pair () = let
		val ping = CML.channel () and pong = CML.channel ()
		in
		  CML.spawn (fn () => ponger (ping, pong));
		  CML.spawn (fn () => CML.send (done, pinger (ping, pong, rounds)))
		end
	  fun startAll 0 = ()
	    | startAll k = (pair (); startAll (k - 1))
	  (* count the pairs whose pinger saw every answer *)
	  fun collect (0, good) = good
	    | collect (k, good) =
		collect (k - 1, if CML.recv done = rounds then good + 1 else good)
	  val (good, secs) = timed (fn () => (startAll pairs; collect (pairs, 0)))
	  val msgs = 2 * pairs * rounds
	  val ok = (good = pairs)
	  in
	    report {
		program = "parpingpong", n = n, seconds = secs, ok = ok,
		extras = [("pairs", intStr pairs), ("msgs", intStr msgs),
		          ("rate", rate (msgs, secs)), ("unit", "msgs/s")]
	      };
	    ok
	  end

    (* ---- primes ---- *)

    (* the sieve: a generator of 2, 3, 4, ... and one filter thread per prime found *)
    fun sieve n = let
	  fun generator out = let
		fun loop i = (CML.send (out, i); loop (i + 1))
		in
		  loop 2
		end
	  fun filter (p, inCh, outCh) = let
		fun loop () = let
		      val x = CML.recv inCh
		      in
			if x mod p <> 0 then CML.send (outCh, x) else ();
			loop ()
		      end
		in
		  loop ()
		end
	  val first = CML.channel ()
	  (* k primes found so far; ch yields the numbers no found prime divides. The threads are
	   * the generator and one filter per prime but the last: n in all. *)
	  fun loop (k, ch, last, sum) = if k = n
		then (last, sum)
		else let
		  val p = CML.recv ch
		  in
		    if k + 1 < n
		      then let
			val out = CML.channel ()
			in
			  CML.spawn (fn () => filter (p, ch, out));
			  loop (k + 1, out, p, sum + p)
			end
		      else loop (k + 1, ch, p, sum + p)
		  end
	  in
	    CML.spawn (fn () => generator first);
	    loop (0, first, 0, 0)
	  end

    (* the reference answer, by trial division, outside the timed region *)
    fun referencePrimes n = let
	  val found = Array.array (Int.max (n, 1), 0)
	  fun isPrime (x, i, k) =
		if i >= k then true
		else let val p = Array.sub (found, i)
		  in
		    if p * p > x then true
		    else if x mod p = 0 then false
		    else isPrime (x, i + 1, k)
		  end
	  fun loop (k, x, sum) = if k = n
		then ((if n > 0 then Array.sub (found, n - 1) else 0), sum)
		else if isPrime (x, 0, k)
		  then (Array.update (found, k, x); loop (k + 1, x + 1, sum + x))
		  else loop (k, x + 1, sum)
	  in
	    loop (0, 2, 0)
	  end

    fun primesBench n = let
	  val ((nth, sum), secs) = timed (fn () => sieve n)
	  val (refNth, refSum) = referencePrimes n
	  val ok = nth = refNth andalso sum = refSum andalso (n <> 2000 orelse nth = 17389)
	  in
	    report {
		program = "primes", n = n, seconds = secs, ok = ok,
		extras = [("nth", intStr nth), ("sum", intStr sum), ("threads", intStr n)]
	      };
	    ok
	  end

    (* ---- skynet ---- *)

    (* Node for the leaves [num, num+size): a leaf sends its number; an inner node spawns
     * min(branch, size) children over near-equal slices and sends the sum of their answers. *)
    fun skynetBench (leaves, branch) = let
	  val threads = ref 0
	  fun node (num, size, parent) =
		if size = 1
		  then CML.send (parent, Int64.fromInt num)
		  else let
		    val ch = CML.channel ()
		    val q = size div branch and r = size mod branch
		    fun spawnKids (i, start) = if i = branch
			  then ()
			  else let
			    val s = if i < r then q + 1 else q
			    in
			      if s > 0
				then (
				  threads := !threads + 1;
				  ignore (CML.spawn (fn () => node (start, s, ch))))
				else ();
			      spawnKids (i + 1, start + s)
			    end
		    fun collect (0, acc) = acc
		      | collect (k, acc) = collect (k - 1, Int64.+ (acc, CML.recv ch))
		    in
		      spawnKids (0, num);
		      CML.send (parent, collect (Int.min (branch, size), 0))
		    end
	  fun run () = let
		val top = CML.channel ()
		in
		  threads := 1;
		  CML.spawn (fn () => node (0, leaves, top));
		  CML.recv top
		end
	  val (sum, secs) = timed run
	  val l = Int64.fromInt leaves
	  val expect = Int64.div (Int64.* (l, Int64.- (l, 1)), 2)
	  val ok = (sum = expect)
	  in
	    report {
		program = "skynet", n = leaves, seconds = secs, ok = ok,
		extras = [("branch", intStr branch), ("sum", int64Str sum),
		          ("threads", intStr (!threads))]
	      };
	    ok
	  end

    (* ---- command line ---- *)

    fun usage () = (
	  TextIO.output (TextIO.stdErr,
	    "usage: peers (spawn|pingpong|parpingpong|primes) N | skynet LEAVES [BRANCH]\n");
	  OS.Process.failure)

    fun posInt s = (case Int.fromString s
	   of SOME i => if i > 0 then SOME i else NONE
	    | NONE => NONE
	  (* end case *))

    (* run `bench` as the root thread of CML and shut down with its verdict *)
    fun runCML bench = RunCML.doit (fn () =>
	  RunCML.shutdown (if bench () then OS.Process.success else OS.Process.failure),
	  NONE)

    fun main (_, args) = (case args
	   of [prog, nStr] => (case (prog, posInt nStr)
		 of ("spawn", SOME n) => runCML (fn () => spawnBench n)
		  | ("pingpong", SOME n) => runCML (fn () => pingpongBench n)
		  | ("parpingpong", SOME n) => runCML (fn () => parPingpongBench n)
		  | ("primes", SOME n) => runCML (fn () => primesBench n)
		  | ("skynet", SOME n) => runCML (fn () => skynetBench (n, 10))
		  | _ => usage ()
		(* end case *))
	    | ["skynet", lStr, bStr] => (case (posInt lStr, posInt bStr)
		 of (SOME l, SOME b) => if b >= 2
		      then runCML (fn () => skynetBench (l, b))
		      else usage ()
		  | _ => usage ()
		(* end case *))
	    | _ => usage ()
	  (* end case *))
	    handle ex => (
	      TextIO.output (TextIO.stdErr, "peers: uncaught exception " ^ exnMessage ex ^ "\n");
	      OS.Process.failure)

  end
