__polyglavSearch.add("b000-of-001","s","s-a43b590addeb","00230B");
