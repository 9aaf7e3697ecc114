"""python show.py FILE.jsonl [op-substring]: the differences found, one line each (kind, op, dtype, sample, message; then the sample)."""
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if len(sys.argv) > 2 and sys.argv[2] not in r["op"]:
        continue
    print(r["kind"], r["op"], r.get("dtype"), r.get("sample"), r.get("via"), "|", r["msg"][:300])
    if r.get("desc"): print("    ", r["desc"][:300].replace("\n", " "))
    if r.get("tb"): print("    tb:", r["tb"].replace("\n", " ")[:300])
