"""TOPK.ADD / INCRBY replies against the lists around them (redis-py,
RESP2): over random commands on a skewed stream, each command's reply names
exactly the items that were in TOPK.LIST before it and are not after it,
each once, at an argument that entered the list. The server keeps the list
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
for name, k in [("prop:a", 5), ("prop:b", 1), ("prop:c", 12)] + made:
    if (name, k) not in made:
        assert r.execute_command("TOPK.RESERVE", name, k) == "OK"
    for step in range(400):
        before = r.execute_command("TOPK.LIST", name)
        items = rng.choices(keys, weights, k=rng.randint(1, 25))
        if rng.random() < 0.3:
            incrs = [rng.choice([0, 1, 2, 7, 40]) for _ in items]
            args = [x for pair in zip(items, incrs) for x in pair]
            reply = r.execute_command("TOPK.INCRBY", name, *args)
        else:
            reply = r.execute_command("TOPK.ADD", name, *items)
        after = r.execute_command("TOPK.LIST", name)
        assert len(reply) == len(items), (name, step, reply)
        named = [x for x in reply if x is not None]
        assert sorted(named) == sorted(set(before) - set(after)), (name, step, before, after, items, reply)
        for item, out in zip(items, reply):
            if out is not None:
                assert item in after and item not in before, (name, step, item, before, after)
        assert len(after) == min(k, len(set(after))), after
print("ok")
