__polyglavSearch.add("b000-of-001","s","s-beea256c85bf","00230B");
