# %% [markdown]
# # A small analysis
#
# A py:percent file: `j-cli exec SESSION -f analysis.py` runs it into
# `analysis.ipynb`, which keeps every output.

# %%
import math

values = [math.sin(i / 5) for i in range(50)]
print(f"{len(values)} values, max {max(values):.3f}")

# %%
import matplotlib.pyplot as plt

plt.figure(figsize=(4, 2.5))
plt.plot(values)
plt.title("sin")
plt.show()

# %%
from IPython.display import HTML

rows = "".join(f"<tr><td>{i}</td><td>{v:.2f}</td></tr>" for i, v in enumerate(values[:3]))
HTML(f"<table><tr><th>i</th><th>value</th></tr>{rows}</table>")
