"""redis-py (Debian's python3-redis, RESP2) against ebb's RESP port: its
TOPK helpers, a pipeline and its error type, as an application would use
them. Prints "ok"; an assertion names what differs. Run by resp_server_test."""
import sys

import redis

r = redis.Redis(port=int(sys.argv[1]), decode_responses=True)
assert r.ping() is True
topk = r.topk()
assert topk.reserve("py:list", 3, 50, 4, 0.9) is True
assert topk.add("py:list", "a", "b", "a") == [None, None, None]
assert topk.incrby("py:list", ["c", "d"], [5, 1]) == [None, None]
assert topk.query("py:list", "a", "zz") == [1, 0]
assert topk.count("py:list", "a", "c", "zz") == [2, 5, 0]
assert topk.list("py:list") == ["c", "a", "b"], topk.list("py:list")
assert topk.list("py:list", withcount=True) == ["c", 5, "a", 2, "b", 1]
info = topk.info("py:list")
assert (info.k, info.width, info.depth, float(info.decay)) == (3, 50, 4, 0.9), vars(info)

pipe = r.pipeline(transaction=False)
for i in range(1000):
    pipe.execute_command("TOPK.ADD", "py:list", "k%d" % (i % 4))
replies = pipe.execute()
assert len(replies) == 1000 and all(len(x) == 1 for x in replies), replies[:5]
final = topk.list("py:list")
assert len(final) == 3 and set(final) <= {"k0", "k1", "k2", "k3"}, final

try:
    topk.incrby("py:list", ["x"], [100001])
    raise AssertionError("an increment past 100,000 was taken")
except redis.ResponseError as e:
    assert str(e).startswith("TopK: increment must be an integer"), str(e)
assert topk.count("py:list", "x") == [0]

cms = r.cms()
assert cms.initbydim("py:cms", 2000, 5) is True
assert cms.incrby("py:cms", ["a", "b", "a"], [3, 1, 2]) == [3, 1, 5]
assert cms.query("py:cms", "a", "b", "zz") == [5, 1, 0]
cinfo = cms.info("py:cms")
assert (cinfo.width, cinfo.depth, cinfo.count) == (2000, 5, 6), vars(cinfo)
assert r.type("py:cms") == "CMSk-TYPE"
assert cms.initbydim("py:cms2", 2000, 5) is True
assert cms.merge("py:cms2", 2, ["py:cms", "py:cms"], weights=[1, 2]) is True
assert cms.query("py:cms2", "a", "b") == [15, 3]

assert r.type("py:list") == "TopK-TYPE"
assert r.exists("py:list") == 1
assert r.delete("py:list") == 1
assert r.exists("py:list") == 0
assert r.client_setname("app") is True and r.client_getname() == "app"
assert r.info()["redis_version"] == "7.0.0"
print("ok")
