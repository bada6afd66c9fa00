%% peers.erl: the Erlang/OTP peer of pcml's benchmark suite (see ../README.md): processes and
%% mailboxes. Run as
%%
%%   erl +S PROCS +P 4194304 -noshell -pa DIR -run peers main PROGRAM ARG...
%%
%% where PROGRAM ARG... is one of
%%
%%   spawn N          spawn a trivial process and wait for its done message, N times in sequence
%%   pingpong N       two processes bounce N messages (N div 2 round trips)
%%   parpingpong N    8 independent ping-pong pairs at once, N messages in all
%%   primes N         first N primes by a chain of filter processes (the concurrent sieve)
%%   skynet L [B]     a tree of processes, B children per node (default 10), L leaves; the
%%                    leaves' numbers are summed up the tree
%%
%% and the actor programs of seed 000 (chapter 4), tiny programs whose `seconds=` is the mean
%% of REPS timed runs after two untimed ones, the second of which gives `peak_rss_added=`:
%%
%%   skynet-paper D REPS   the thesis's skynet: a 3-ary tree of processes of depth D; each leaf
%%                         sends 1, each node the sum of its three children's (3^D in all)
%%   bombing1 M REPS       message bombing 1: a receiver takes M {msg, 6, 3} messages by
%%                         selective receive while M {badmsg, 6, 3} ones, sent first by another
%%                         process, stay unreceived in its mailbox; it sums 6 div 3 (2 M in all)
%%   bombing2 M REPS       message bombing 2: the same without the M unreceived messages
%%   bitonic N REPS        bitonic mergesort of N numbers (N a power of 2; N-1 down to 0) by
%%                         processes, cutoff 2: every split sorts one half in a new process
%%
%% Each prints one line on stdout:
%%
%%   RESULT program=<name> n=<N> seconds=<float> check=<ok|FAIL> <key=value...>
%%
%% and halts with status 1 when the check fails (2 on bad arguments). Times come from
%% erlang:monotonic_time/1 and cover the work only, not the VM start-up.
%%
%% Erlang's sends are asynchronous. Ping-pong and skynet need no more than that (every send is
%% answered or awaited). The sieve's stages do need flow control, or the generator would flood
%% the chain without bound: there a stage's send is a rendezvous, a message and then a wait
%% for the receiver's acknowledgement, which is what a synchronous channel does.
-module(peers).
-export([main/1]).

-define(PAIRS, 8).

%% ---- command line ----

main(Args) ->
    Ok = try run(Args)
         catch throw:usage ->
             io:format(standard_error,
                       "usage: peers (spawn|pingpong|parpingpong|primes) N"
                       " | skynet LEAVES [BRANCH]"
                       " | (skynet-paper DEPTH|bombing1 M|bombing2 M|bitonic N) REPS~n", []),
             erlang:halt(2)
         end,
    erlang:halt(case Ok of true -> 0; false -> 1 end).

run(["spawn", N]) -> spawn_bench(pos_int(N));
run(["pingpong", N]) -> pingpong_bench(pos_int(N));
run(["parpingpong", N]) -> parpingpong_bench(pos_int(N));
run(["primes", N]) -> primes_bench(pos_int(N));
run(["skynet", L]) -> skynet_bench(pos_int(L), 10);
run(["skynet", L, B]) ->
    case pos_int(B) of
        Branch when Branch >= 2 -> skynet_bench(pos_int(L), Branch);
        _ -> throw(usage)
    end;
run(["skynet-paper", D, Reps]) -> paper_skynet_bench(pos_int(D), pos_int(Reps));
run(["bombing1", M, Reps]) -> bombing_bench(1, pos_int(M), pos_int(Reps));
run(["bombing2", M, Reps]) -> bombing_bench(2, pos_int(M), pos_int(Reps));
run(["bitonic", N, Reps]) ->
    case pos_int(N) of
        Len when Len band (Len - 1) =:= 0 -> bitonic_bench(Len, pos_int(Reps));
        _ -> throw(usage)
    end;
run(_) -> throw(usage).

pos_int(S) ->
    case string:to_integer(S) of
        {I, ""} when I > 0 -> I;
        _ -> throw(usage)
    end.

%% ---- output and timing ----

report(Program, N, Seconds, Ok, Extras) ->
    Fields = ["RESULT",
              "program=" ++ Program,
              "n=" ++ integer_to_list(N),
              "seconds=" ++ io_lib:format("~.9f", [Seconds]),
              "check=" ++ case Ok of true -> "ok"; false -> "FAIL" end]
        ++ Extras
        ++ ["peer=erlang", "procs=" ++ integer_to_list(erlang:system_info(schedulers_online))],
    io:format("~s~n", [lists:join(" ", Fields)]),
    Ok.

rate(_Count, Seconds) when Seconds =< 0 -> "rate=inf";
rate(Count, Seconds) -> "rate=" ++ io_lib:format("~.1f", [Count / Seconds]).

%% timed(F) runs F() and returns {Result, Seconds}.
timed(F) ->
    T0 = erlang:monotonic_time(nanosecond),
    X = F(),
    T1 = erlang:monotonic_time(nanosecond),
    {X, (T1 - T0) / 1.0e9}.

%% ---- spawn ----

spawn_loop(0, Joined) -> Joined;
spawn_loop(I, Joined) ->
    Parent = self(),
    Child = spawn(fun() -> Parent ! {done, self()} end),
    receive
        {done, Child} -> spawn_loop(I - 1, Joined + 1)
    end.

spawn_bench(N) ->
    {Joined, Secs} = timed(fun() -> spawn_loop(N, 0) end),
    report("spawn", N, Secs, Joined =:= N,
           ["threads=" ++ integer_to_list(Joined), rate(N, Secs), "unit=threads/s"]).

%% ---- ping-pong ----

%% The ponger answers every {ping, From, X} with {pong, X+1}, until told to stop.
ponger() ->
    receive
        {ping, From, X} -> From ! {pong, X + 1}, ponger();
        stop -> ok
    end.

%% The pinger does Rounds round trips from 0 and returns the last answer, which is Rounds when
%% nothing was lost; then it stops the ponger.
pinger(Ponger, Rounds) -> pinger(Ponger, Rounds, 0).

pinger(Ponger, 0, X) ->
    Ponger ! stop,
    X;
pinger(Ponger, I, X) ->
    Ponger ! {ping, self(), X},
    receive
        {pong, Y} -> pinger(Ponger, I - 1, Y)
    end.

pingpong_bench(N) ->
    Rounds = N div 2,
    {Last, Secs} = timed(fun() -> pinger(spawn(fun ponger/0), Rounds) end),
    Msgs = 2 * Rounds,
    report("pingpong", N, Secs, Last =:= Rounds,
           ["msgs=" ++ integer_to_list(Msgs), rate(Msgs, Secs), "unit=msgs/s"]).

%% ---- parallel ping-pong ----

parpingpong_bench(N) ->
    Rounds = N div (2 * ?PAIRS),
    Main = self(),
    Run = fun() ->
                  [spawn(fun() -> Main ! {done, pinger(spawn(fun ponger/0), Rounds)} end)
                   || _ <- lists:seq(1, ?PAIRS)],
                  collect_pairs(?PAIRS, Rounds, 0)
          end,
    {Good, Secs} = timed(Run),
    Msgs = 2 * ?PAIRS * Rounds,
    report("parpingpong", N, Secs, Good =:= ?PAIRS,
           ["pairs=" ++ integer_to_list(?PAIRS), "msgs=" ++ integer_to_list(Msgs),
            rate(Msgs, Secs), "unit=msgs/s"]).

%% counts the pairs whose pinger saw every answer
collect_pairs(0, _Rounds, Good) -> Good;
collect_pairs(K, Rounds, Good) ->
    receive
        {done, Rounds} -> collect_pairs(K - 1, Rounds, Good + 1);
        {done, _} -> collect_pairs(K - 1, Rounds, Good)
    end.

%% ---- primes ----

%% give(To, X): a rendezvous send, returning once To has taken X.
give(To, X) ->
    To ! {num, self(), X},
    receive
        {ack, To} -> ok
    end.

%% take(): receive the next number from whichever stage feeds this one.
take() ->
    receive
        {num, From, X} -> From ! {ack, self()}, X
    end.

%% The sieve is a chain: the generator gives 2, 3, 4, ... to the first stage; a stage holds a
%% prime and passes on what the prime does not divide. The last stage is a tail without a prime
%% yet: the first number that reaches it passed every earlier prime, so it is the next prime.
%% The tail gives it to the main process and becomes the stage of that prime; each prime found
%% adds a stage. Once the main process stops taking, the chain fills and every stage waits,
%% until the VM halts.
generator(Out, I) ->
    give(Out, I),
    generator(Out, I + 1).

tail(Main) ->
    P = take(),
    give(Main, P),
    stage(Main, P, none).

stage(Main, P, Next) ->
    X = take(),
    case X rem P of
        0 -> stage(Main, P, Next);
        _ when Next =:= none ->
            Tail = spawn(fun() -> tail(Main) end),
            give(Tail, X),
            stage(Main, P, Tail);
        _ ->
            give(Next, X),
            stage(Main, P, Next)
    end.

%% sieve(N) takes the first N primes from the chain and returns {Nth, Sum}.
sieve(N) ->
    Main = self(),
    First = spawn(fun() -> tail(Main) end),
    spawn(fun() -> generator(First, 2) end),
    take_primes(N, 0, 0).

take_primes(0, Last, Sum) -> {Last, Sum};
take_primes(K, _Last, Sum) ->
    P = take(),
    take_primes(K - 1, P, Sum + P).

%% reference_primes(N) is the check, by trial division, outside the timed region.
reference_primes(N) -> reference_primes(N, 2, [], 0, 0).

reference_primes(0, _X, _Found, Last, Sum) -> {Last, Sum};
reference_primes(K, X, Found, Last, Sum) ->
    case is_prime(X, Found) of
        true -> reference_primes(K - 1, X + 1, Found ++ [X], X, Sum + X);
        false -> reference_primes(K, X + 1, Found, Last, Sum)
    end.

is_prime(_X, []) -> true;
is_prime(X, [P | _]) when P * P > X -> true;
is_prime(X, [P | _]) when X rem P =:= 0 -> false;
is_prime(X, [_ | Ps]) -> is_prime(X, Ps).

primes_bench(N) ->
    {{Nth, Sum}, Secs} = timed(fun() -> sieve(N) end),
    {RefNth, RefSum} = reference_primes(N),
    Ok = Nth =:= RefNth andalso Sum =:= RefSum andalso (N =/= 2000 orelse Nth =:= 17389),
    %% processes: the generator and one stage per prime found
    report("primes", N, Secs, Ok,
           ["nth=" ++ integer_to_list(Nth), "sum=" ++ integer_to_list(Sum),
            "threads=" ++ integer_to_list(N + 1)]).

%% ---- skynet ----

%% node(Num, Size, Branch, Parent) covers the leaves [Num, Num+Size): a leaf sends its number;
%% an inner node spawns min(Branch, Size) children over near-equal slices and sends the sum of
%% their answers.
node(Num, 1, _Branch, Parent) ->
    Parent ! {sum, Num};
node(Num, Size, Branch, Parent) ->
    Kids = spawn_kids(0, Num, Size div Branch, Size rem Branch, Branch, 0),
    Parent ! {sum, collect_sums(Kids, 0)}.

spawn_kids(Branch, _Start, _Q, _R, Branch, Kids) -> Kids;
spawn_kids(I, Start, Q, R, Branch, Kids) ->
    S = case I < R of true -> Q + 1; false -> Q end,
    case S > 0 of
        true ->
            Self = self(),
            spawn(fun() -> node(Start, S, Branch, Self) end),
            spawn_kids(I + 1, Start + S, Q, R, Branch, Kids + 1);
        false ->
            spawn_kids(I + 1, Start + S, Q, R, Branch, Kids)
    end.

collect_sums(0, Acc) -> Acc;
collect_sums(K, Acc) ->
    receive
        {sum, S} -> collect_sums(K - 1, Acc + S)
    end.

%% the number of nodes of the tree, outside the timed region
skynet_threads(1, _Branch) -> 1;
skynet_threads(Size, Branch) ->
    Q = Size div Branch,
    R = Size rem Branch,
    1 + lists:sum([skynet_threads(S, Branch)
                   || I <- lists:seq(0, Branch - 1),
                      S <- [case I < R of true -> Q + 1; false -> Q end],
                      S > 0]).

skynet_bench(Leaves, Branch) ->
    Main = self(),
    Run = fun() ->
                  spawn(fun() -> node(0, Leaves, Branch, Main) end),
                  receive {sum, S} -> S end
          end,
    {Sum, Secs} = timed(Run),
    Ok = Sum =:= Leaves * (Leaves - 1) div 2,
    report("skynet", Leaves, Secs, Ok,
           ["branch=" ++ integer_to_list(Branch), "sum=" ++ integer_to_list(Sum),
            "threads=" ++ integer_to_list(skynet_threads(Leaves, Branch))]).

%% ---- seed 000's actor programs: timing and memory ----

%% vm_status(Key) is the value of Key ("VmRSS", "VmHWM") of /proc/self/status, in bytes.
vm_status(Key) ->
    {ok, Status} = file:read_file("/proc/self/status"),
    [Line] = [L || L <- string:split(binary_to_list(Status), "\n", all),
                   lists:prefix(Key ++ ":", L)],
    [_, Kb | _] = string:lexemes(Line, " \t"),
    list_to_integer(Kb) * 1024.

%% warm(F) runs F() twice and returns {Result, PeakRssAdded} of the second run: the peak
%% resident set during it (VmHWM, reset first through /proc/self/clear_refs) less the resident
%% set before it, as the Rust harness measures pcml after a warm-up run; -1 where /proc cannot
%% be written. The first run warms the VM's allocators, so the figure is what a run needs
%% beyond what the last one left.
warm(F) ->
    F(),
    Base = vm_status("VmRSS"),
    case file:write_file("/proc/self/clear_refs", "5") of
        ok ->
            X = F(),
            {X, vm_status("VmHWM") - Base};
        {error, _} ->
            {F(), -1}
    end.

%% actor_bench(Name, N, Reps, Run, Good, Extras): two untimed runs (the second's memory), then
%% Reps timed runs; seconds= is their mean. Every run's answer must satisfy Good.
actor_bench(Name, N, Reps, Run, Good, Extras) ->
    {First, Peak} = warm(Run),
    {Goods, Secs} = timed(fun() -> repeat_count(Reps, Run, Good, 0) end),
    Ok = Good(First) andalso Goods =:= Reps,
    report(Name, N, Secs / Reps, Ok,
           Extras ++ ["reps=" ++ integer_to_list(Reps),
                      "peak_rss_added=" ++ integer_to_list(Peak)]).

%% repeat_count(K, Run, Good, Acc) runs Run() K times and counts the good answers.
repeat_count(0, _Run, _Good, Acc) -> Acc;
repeat_count(K, Run, Good, Acc) ->
    X = Run(),
    repeat_count(K - 1, Run, Good, case Good(X) of true -> Acc + 1; false -> Acc end).

%% ---- skynet, as in the thesis ----

%% paper_node(0, Parent) is a leaf: it sends 1. paper_node(D, Parent) spawns three children of
%% depth D-1, takes their three sums and sends their total.
paper_node(0, Parent) ->
    Parent ! {sum, 1};
paper_node(D, Parent) ->
    Self = self(),
    spawn(fun() -> paper_node(D - 1, Self) end),
    spawn(fun() -> paper_node(D - 1, Self) end),
    spawn(fun() -> paper_node(D - 1, Self) end),
    Parent ! {sum, collect_sums(3, 0)}.

pow3(0) -> 1;
pow3(D) -> 3 * pow3(D - 1).

paper_skynet_bench(Depth, Reps) ->
    Leaves = pow3(Depth),
    Run = fun() ->
                  Main = self(),
                  spawn(fun() -> paper_node(Depth, Main) end),
                  receive {sum, S} -> S end
          end,
    actor_bench("skynet-paper", Depth, Reps, Run, fun(S) -> S =:= Leaves end,
                ["leaves=" ++ integer_to_list(Leaves),
                 "threads=" ++ integer_to_list((3 * Leaves - 1) div 2)]).

%% ---- message bombing ----

%% The receiver takes M {msg, Num, Den} messages, summing Num div Den, and sends the sum to
%% Parent. Its receive names {msg, _, _} only, so {badmsg, _, _} messages stay in its mailbox
%% and every receive passes over those ahead of the next {msg, ...}.
bomb_receiver(0, Acc, Parent) -> Parent ! {bombed, Acc};
bomb_receiver(K, Acc, Parent) ->
    receive
        {msg, Num, Den} -> bomb_receiver(K - 1, Acc + Num div Den, Parent)
    end.

bomb_send(0, _To, _Msg) -> ok;
bomb_send(K, To, Msg) -> To ! Msg, bomb_send(K - 1, To, Msg).

%% bombing 1: the bad sender is spawned before the good one; bombing 2 has no bad sender.
bombing_run(Variant, M) ->
    Main = self(),
    A = spawn(fun() -> bomb_receiver(M, 0, Main) end),
    case Variant of
        1 -> spawn(fun() -> bomb_send(M, A, {badmsg, 6, 3}) end);
        2 -> ok
    end,
    spawn(fun() -> bomb_send(M, A, {msg, 6, 3}) end),
    receive {bombed, Sum} -> Sum end.

bombing_bench(Variant, M, Reps) ->
    Name = "bombing" ++ integer_to_list(Variant),
    Sent = case Variant of 1 -> 2 * M; 2 -> M end,
    actor_bench(Name, M, Reps, fun() -> bombing_run(Variant, M) end,
                fun(S) -> S =:= 2 * M end,
                ["msgs=" ++ integer_to_list(Sent)]).

%% ---- bitonic mergesort ----

%% halves(Xs) splits Xs into its first and second halves (Xs of even length).
halves(Xs) -> lists:split(length(Xs) div 2, Xs).

%% min_max(Left, Right): the pairwise minima and maxima of two lists of one length.
min_max(Left, Right) -> min_max(Left, Right, [], []).

min_max([], [], Mins, Maxs) -> {lists:reverse(Mins), lists:reverse(Maxs)};
min_max([A | As], [B | Bs], Mins, Maxs) ->
    min_max(As, Bs, [min(A, B) | Mins], [max(A, B) | Maxs]).

%% in_child(F) runs F() in a new process; await(Ref) takes its answer. The reference makes the
%% receive selective: answers of deeper calls made in between may already be waiting.
in_child(F) ->
    Parent = self(),
    Ref = make_ref(),
    spawn(fun() -> Parent ! {Ref, F()} end),
    Ref.

await(Ref) ->
    receive {Ref, X} -> X end.

%% merge(Xs, Cutoff): sorts the bitonic list Xs (ascending, then descending). Above the
%% cutoff the maxima are merged in a new process while this one merges the minima.
merge(Xs, Cutoff) when length(Xs) =< Cutoff -> merge_seq(Xs);
merge(Xs, Cutoff) ->
    {Left, Right} = halves(Xs),
    {Mins, Maxs} = min_max(Left, Right),
    Ref = in_child(fun() -> merge(Maxs, Cutoff) end),
    Low = merge(Mins, Cutoff),
    Low ++ await(Ref).

merge_seq([]) -> [];
merge_seq([X]) -> [X];
merge_seq(Xs) ->
    {Left, Right} = halves(Xs),
    {Mins, Maxs} = min_max(Left, Right),
    merge_seq(Mins) ++ merge_seq(Maxs).

%% msort(Xs, Cutoff): above the cutoff the second half is sorted (and reversed, to make the
%% whole bitonic) in a new process while this one sorts the first half; then they are merged.
msort(Xs, Cutoff) when length(Xs) =< Cutoff -> msort_seq(Xs);
msort(Xs, Cutoff) ->
    {Left, Right} = halves(Xs),
    Ref = in_child(fun() -> lists:reverse(msort(Right, Cutoff)) end),
    Low = msort(Left, Cutoff),
    merge(Low ++ await(Ref), Cutoff).

msort_seq([]) -> [];
msort_seq([X]) -> [X];
msort_seq(Xs) ->
    {Left, Right} = halves(Xs),
    merge_seq(msort_seq(Left) ++ lists:reverse(msort_seq(Right))).

-define(BITONIC_CUTOFF, 2).

%% the processes one sort makes: a split of a list longer than the cutoff makes one
bitonic_threads(N) when N =< ?BITONIC_CUTOFF -> 0;
bitonic_threads(N) -> 1 + 2 * bitonic_threads(N div 2) + merge_threads(N).

merge_threads(N) when N =< ?BITONIC_CUTOFF -> 0;
merge_threads(N) -> 1 + 2 * merge_threads(N div 2).

bitonic_bench(N, Reps) ->
    Input = lists:seq(N - 1, 0, -1),
    Want = lists:seq(0, N - 1),
    actor_bench("bitonic", N, Reps, fun() -> msort(Input, ?BITONIC_CUTOFF) end,
                fun(S) -> S =:= Want end,
                ["cutoff=" ++ integer_to_list(?BITONIC_CUTOFF),
                 "threads=" ++ integer_to_list(bitonic_threads(N))]).
