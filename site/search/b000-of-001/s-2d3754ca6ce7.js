__polyglavSearch.add("b000-of-001","s","s-2d3754ca6ce7","00230B");
