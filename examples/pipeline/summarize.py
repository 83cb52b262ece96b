import csv

with open("data.csv") as fh:
    ys = [float(r["y"]) for r in csv.DictReader(fh)]
with open("summary.txt", "w") as fh:
    fh.write(f"{len(ys)} rows, mean y {sum(ys) / len(ys):.3f}\n")
print(open("summary.txt").read())
