__polyglavSearch.add("b000-of-001","s","s-00eb84cde6fd","00230B");
