with open("order.txt", "a") as f:
    f.write("report\n")
metrics = open("metrics.txt").read().strip()
with open("report.txt", "w") as f:
    f.write(f"report: {metrics}\n")
