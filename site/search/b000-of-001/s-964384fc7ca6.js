__polyglavSearch.add("b000-of-001","s","s-964384fc7ca6","00230B");
