/* placeholder: replaced by its module */
