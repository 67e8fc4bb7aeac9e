"""TOPK.ADD / INCRBY replies against the lists around them (redis-py,
RESP2): over random commands on a skewed stream, each command's reply names
exactly the items that were in TOPK.LIST before it and are not after it,
each once, first at the arguments that entered the list, then (more left
than entered) at the first others. Pipelined runs of them (sent in one
write, so that the server counts them as one batch) name, over the run,
exactly the items that left the list over the run. The server keeps the list
of the last command to answer the next one cheaply; LIST computes it from
scratch, so the two are checked against each other. Prints "ok"; run by
resp_server_test with the port, a seed and keys it made (name:k)."""
import random
import sys

import redis

r = redis.Redis(port=int(sys.argv[1]), decode_responses=True)
rng = random.Random(int(sys.argv[2]))
keys = ["k%d" % i for i in range(60)]
weights = [1.0 / (i + 1) ** 0.9 for i in range(60)]
# Keys made here, then any made by the caller (argv[3:], name:k), such as
# one over HTTP with hardly more candidates than k, whose summary lets
# listed keys go.
made = [(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for a in sys.argv[3:]]


def check(where, before, after, items, reply, increments=None):
    """reply[i]: what items[i] named. Exactly the items that left, each once:
    first at the arguments that entered (each item's first), in order;
    leavers beyond those at the first other arguments, in order (an
    increment of 0 names nothing)."""
    assert len(reply) == len(items), (where, reply)
    counted = [i for i in range(len(items)) if increments is None or increments[i] > 0]
    left = [x for x in before if x not in after]
    named = [x for x in reply if x is not None]
    entering, seen = [], set()
    for i in counted:
        if items[i] in after and items[i] not in before and items[i] not in seen:
            entering.append(i)
            seen.add(items[i])
    others = [i for i in counted if i not in entering]
    assert sorted(named) == sorted(left[: len(entering + others)]), (where, before, after, items, reply)
    expected = [None] * len(items)
    for i, name in zip(entering + others, left):
        expected[i] = name
    # Which leaver goes to which argument follows the list's order as the
    # server last computed it, which a fresh LIST may rank otherwise: the
    # positions named are compared, and the names as a set (above).
    assert [x is not None for x in reply] == [x is not None for x in expected], (where, before, after, items, reply)


# prop:h is a decayed view (ebb's HALFLIFE): its scores grow with the time
# an event comes, so an item's weight differs from one command to the next.
extra = {"prop:h": ["8", "7", "0.9", "HALFLIFE", "1s"]}
for name, k in [("prop:a", 5), ("prop:b", 1), ("prop:c", 12), ("prop:h", 6)] + made:
    if (name, k) not in made:
        assert r.execute_command("TOPK.RESERVE", name, k, *extra.get(name, [])) == "OK"
    for step in range(400):
        before = r.execute_command("TOPK.LIST", name)
        items = rng.choices(keys, weights, k=rng.randint(1, 25))
        if rng.random() < 0.3:
            incrs = [rng.choice([0, 1, 2, 7, 40]) for _ in items]
            args = [x for pair in zip(items, incrs) for x in pair]
            reply = r.execute_command("TOPK.INCRBY", name, *args)
        else:
            incrs = None
            reply = r.execute_command("TOPK.ADD", name, *items)
        after = r.execute_command("TOPK.LIST", name)
        check((name, step), before, after, items, reply, incrs)
        assert len(after) == min(k, len(set(after))), after
    for step in range(150):
        before = r.execute_command("TOPK.LIST", name)
        pipe = r.pipeline(transaction=False)
        sent = []
        for _ in range(rng.randint(2, 8)):
            items = rng.choices(keys, weights, k=rng.randint(1, 6))
            pipe.execute_command("TOPK.ADD", name, *items)
            sent += items
        replies = pipe.execute()
        after = r.execute_command("TOPK.LIST", name)
        check((name, "pipelined", step), before, after, sent, [x for reply in replies for x in reply])
print("ok")
