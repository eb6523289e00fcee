__polyglavSearch.add("","index","index",{"format":3,"documents":18,"weights":{"p":3.0,"a":3.0,"t":1.5,"c":1.5,"s":1.0,"i":1.5,"n":1.0,"o":1.0,"e":1.0},"bundles":[["b000-of-001","m-94dc242df86f"]]});
